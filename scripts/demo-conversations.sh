#!/usr/bin/env bash
# Multi-turn demo: a GSM8K follow-up dialogue run and an information-gathering run on the embedded
# model, each labelled by the local classifier, reported, and drawn as conversation graphs
# (graphs/<run id>/*.png, *.graphml).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/bootstrap.sh
.venv/bin/testbed prepare-model
for scenario in dialogue-gsm8k info-gathering; do
  .venv/bin/testbed run "$scenario"
  run_id=$(.venv/bin/testbed show "$scenario" | .venv/bin/python -c "import json, sys; print(json.load(sys.stdin)['run_id'])")
  .venv/bin/testbed graph "$run_id"
done
