#!/usr/bin/env bash
# CUDA checks of the PyTorch reference runtime, for a machine with an NVIDIA GPU (about 2 minutes).
#
#   bash benchmarks/cuda_smoke.sh                    # $PYTHON if set, else .venv/bin/python, else python3 / python
#   PYTHON=python3 bash benchmarks/cuda_smoke.sh     # a command name on PATH, or a path
#
# Needs torch with CUDA, transformers >= 5, safetensors, and the dflash package (test oracle:
# pip install --no-deps dflash==0.1.0). Prints PASS/FAIL lines; exit status 1 if a check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# PYTHON may be a path or a command name: `command -v` resolves both (a plain `[ -x ]` test takes only paths,
# so PYTHON=python3 used to fall back to `python`, on many GPU images not the one with CUDA torch)
if [ -n "${PYTHON:-}" ]; then
  PY=$(command -v "$PYTHON") || { echo "PYTHON=$PYTHON: no such command or executable file" >&2; exit 2; }
elif [ -x .venv/bin/python ]; then
  PY=.venv/bin/python
else
  PY=$(command -v python3 || command -v python) || { echo "no python3 or python on PATH" >&2; exit 2; }
fi
fail=0
check() { local name=$1; shift; if "$@"; then echo "PASS $name"; else echo "FAIL $name"; fail=1; fi; }

"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU'; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || exit 1

# 1. the CUDA tests (float32 conformance with the dflash package, bf16 runs, replay accounting, CLI)
check "pytest -m cuda" "$PY" -m pytest -q -m cuda tests/test_runtime_torch_cuda.py -rs -p no:cacheprovider

# 2. the smoke command on a tiny saved pair: float32 must be lossless; bf16 is reported
tmp=$(mktemp -d)
"$PY" - "$tmp" <<'PYEOF'
import sys
from pathlib import Path
sys.path.insert(0, ".")
from tests.tiny_dflash import draft_config, draft_state, save_draft, save_tokenizer, target_config, tiny_target
root = Path(sys.argv[1])
tiny_target(3, vocab=64, layers=4).save_pretrained(str(root / "target"), safe_serialization=True)
save_tokenizer(root / "target", 64)
dcfg = draft_config(target_config(vocab=64), block_size=16)
save_draft(root / "draft", dcfg, draft_state(dcfg, 4))
PYEOF
check "smoke cuda float32 lossless" "$PY" -m dflash_compat smoke "$tmp/target" --draft "$tmp/draft" \
  --prompt "w1 w2 w3 w4" --prompt-ids 5,6,7 --max-new-tokens 64 --device cuda --dtype float32
"$PY" -m dflash_compat smoke "$tmp/target" --draft "$tmp/draft" --prompt-ids 5,6,7 --max-new-tokens 64 \
  --device cuda --dtype bfloat16 -f json > "$tmp/bf16.json"
echo "bf16 smoke exit $? (0: lossless or near-tie; 1: differs, a bug):"
"$PY" -c "import json,sys; p=json.load(open(sys.argv[1])); s=p['summary']; r=p['runtime']; print(' verdict', s['verdict'], 'tau', round(s['mean_acceptance'],2), 'speedup', round(s['speedup'],2), 'over', r['baseline'], '|', r['attention'], r['cache'])" "$tmp/bf16.json"
check "smoke cuda bf16 static cache" "$PY" -m dflash_compat smoke "$tmp/target" --draft "$tmp/draft" \
  --prompt-ids 5,6,7 --max-new-tokens 64 --device cuda --dtype bfloat16 --cache static
check "smoke cuda sampling" "$PY" -m dflash_compat smoke "$tmp/target" --draft "$tmp/draft" --prompt-ids 5,6,7 \
  --max-new-tokens 64 --device cuda --temperature 0.8 --top-p 0.9
rm -rf "$tmp"
exit $fail
