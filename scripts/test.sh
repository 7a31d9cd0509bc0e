#!/usr/bin/env bash
# README command 2: install, then the whole test suite, integration tests against a real vLLM
# server with the embedded model included. Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/bootstrap.sh
.venv/bin/testbed prepare-model
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$(mktemp -d)"   # the docs site: a broken link fails here
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
