#!/usr/bin/env bash
# README command 1: install, then run the GSM8K probe on the embedded model (vLLM started and
# stopped by the testbed), then print the report. Extra arguments go to `testbed run`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/bootstrap.sh
.venv/bin/testbed prepare-model
.venv/bin/testbed run probe-gsm8k "$@"
