#!/usr/bin/env bash
# One-shot GPU check of `dflash-check serve` + `probe` against a REAL vLLM (and SGLang, if installed).
# Not run in CI (no GPU); prepared for a session that is lent an NVIDIA GPU. About 5-10 minutes.
#
#   VLLM_PY=/path/to/venv-with-vllm/bin/python bash benchmarks/gpu_serve_probe.sh
#
# Needs: this repo's venv (.venv, or $PYTHON) with torch + transformers (the reference runtime checks
# losslessness on CPU); vLLM 0.33.0 installed in the interpreter $VLLM_PY (default: python3); optional
# SGLang 0.5.23 in $SGLANG_PY. Nothing is downloaded: the pair is a small random-weight Qwen3 target
# and a random DFlash draft written here (override with DFLASH_TARGET / DFLASH_DRAFT, local folders,
# e.g. a trained demo pair: a random draft gives tau ~ 1, a trained one should give more).
#
# Steps, each a PASS/FAIL line; exit status 1 if any check failed:
#   1. `dflash-check serve --engine vllm -f json`: exit 0, argv starts with `vllm serve`.
#   2. launch exactly that argv (plus --gpu-memory-utilization / --max-model-len / --enforce-eager,
#      which no DFlash rule concerns) and wait for /health.
#   3. `dflash-check probe --reference --draft --profile-out`: speculation active (drafts > 0),
#      lossless token for token against the reference runtime, tau >= 1; then `recommend` on it.
#   4. the same with SGLang when $SGLANG_PY imports sglang.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
VLLM_PY=${VLLM_PY:-python3}
SGLANG_PY=${SGLANG_PY:-}
PORT=${PORT:-18000}
WORK=$(mktemp -d)
fail=0
SERVER_PID=""
check() { local name=$1; shift; if "$@"; then echo "PASS $name"; else echo "FAIL $name"; fail=1; fi; }
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT

nvidia-smi -L || { echo "FAIL no NVIDIA GPU"; exit 1; }
"$VLLM_PY" -c "import vllm; print('vllm', vllm.__version__)" || { echo "FAIL vllm is not importable by $VLLM_PY"; exit 1; }

# 0. the pair: a small random Qwen3 target (head_dim 64 for the GPU kernels, peaked logits so bf16 and
#    float32 greedy agree) with a word-level tokenizer, and a random z-lab DFlash draft (block 8).
TARGET=${DFLASH_TARGET:-$WORK/target}
DRAFT=${DFLASH_DRAFT:-$WORK/draft}
if [ -z "${DFLASH_TARGET:-}" ]; then
  "$PY" - "$WORK" <<'PYEOF' || { echo "FAIL building the pair"; exit 1; }
import sys
from pathlib import Path
sys.path.insert(0, ".")
from tests.tiny_dflash import draft_config, draft_state, save_draft, save_tokenizer, target_config, tiny_target
root = Path(sys.argv[1])
shape = dict(vocab=1024, hidden=256, layers=4, heads=4, kv_heads=2, head_dim=64, intermediate=512)
tiny_target(3, **shape).save_pretrained(str(root / "target"), safe_serialization=True)
save_tokenizer(root / "target", 1024)
dcfg = draft_config(target_config(**shape), block_size=8, target_layer_ids=(1, 2), mask_token_id=1023)
save_draft(root / "draft", dcfg, draft_state(dcfg, 4))
PYEOF
fi
printf '%s\n' '{"prompt_ids": [5, 9, 11, 300, 7]}' '{"prompt_ids": [40, 2, 17, 8, 8, 900]}' '"w1 w2 w3 w4 w5"' > "$WORK/prompts.jsonl"

wait_health() {  # $1 = url; up to 10 minutes for model load + CUDA graphs
  for _ in $(seq 1 300); do
    "$PY" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$1/health" 2>/dev/null && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 2
  done
  return 1
}

probe_checks() {  # $1 = engine name, $2 = url
  "$PY" -m dflash_compat probe "$2" --model tiny --prompts "$WORK/prompts.jsonl" --max-tokens 64 --timeout 60 \
    --reference "$TARGET" --draft "$DRAFT" --profile-out "$WORK/$1-profile.json" -f json > "$WORK/$1-probe.json"
  echo "probe ($1) exit $?"
  check "$1 speculation active" "$PY" -c "import json,sys; assert json.load(open(sys.argv[1]))['summary']['speculation_active']" "$WORK/$1-probe.json"
  check "$1 lossless" "$PY" -c "import json,sys; assert json.load(open(sys.argv[1]))['summary']['lossless'] is True" "$WORK/$1-probe.json"
  check "$1 tau >= 1" "$PY" -c "import json,sys; assert json.load(open(sys.argv[1]))['summary']['mean_acceptance'] >= 1" "$WORK/$1-probe.json"
  "$PY" -c "import json,sys; s=json.load(open(sys.argv[1]))['summary']; print(' tau', round(s['mean_acceptance'],3), 'per-position', [round(p,2) for p in s['per_position_acceptance']], 'tok/s', round(s['tokens_per_s'],1), 'ref tau', s['reference_mean_acceptance'])" "$WORK/$1-probe.json"
  check "$1 recommend" "$PY" -m dflash_compat recommend --profile "$WORK/$1-profile.json"
}

# 1-3. vLLM
"$PY" -m dflash_compat serve "$TARGET" --draft "$DRAFT" --engine vllm --served-model-name tiny --port "$PORT" \
  --max-num-seqs 16 -f json > "$WORK/vllm-serve.json"
check "serve vllm exit 0" test $? -eq 0
"$PY" -m dflash_compat serve "$TARGET" --draft "$DRAFT" --engine vllm --served-model-name tiny --port "$PORT" --max-num-seqs 16
mapfile -d '' ARGV < <("$PY" -c "import json,sys; a=json.load(open(sys.argv[1]))['argv']; assert a[:2]==['vllm','serve']; sys.stdout.write('\0'.join(a[2:])+'\0')" "$WORK/vllm-serve.json")
VLLM_BIN=$(dirname "$VLLM_PY")/vllm
[ -x "$VLLM_BIN" ] || VLLM_BIN=vllm
"$VLLM_BIN" serve "${ARGV[@]}" --gpu-memory-utilization 0.3 --max-model-len 2048 --enforce-eager > "$WORK/vllm.log" 2>&1 &
SERVER_PID=$!
if wait_health "http://127.0.0.1:$PORT"; then
  echo "PASS vllm started"
  probe_checks vllm "http://127.0.0.1:$PORT"
else
  echo "FAIL vllm did not start; last lines of its log:"; tail -30 "$WORK/vllm.log"; fail=1
fi
kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""

# 4. SGLang, when installed
if [ -n "$SGLANG_PY" ] && "$SGLANG_PY" -c "import sglang" 2>/dev/null; then
  "$PY" -m dflash_compat serve "$TARGET" --draft "$DRAFT" --engine sglang --served-model-name tiny --port "$PORT" \
    -f json > "$WORK/sglang-serve.json"
  check "serve sglang exit 0" test $? -eq 0
  mapfile -d '' ARGV < <("$PY" -c "import json,sys; a=json.load(open(sys.argv[1]))['argv']; assert a[:3]==['python','-m','sglang.launch_server']; sys.stdout.write('\0'.join(a[3:])+'\0')" "$WORK/sglang-serve.json")
  "$SGLANG_PY" -m sglang.launch_server "${ARGV[@]}" --mem-fraction-static 0.3 > "$WORK/sglang.log" 2>&1 &
  SERVER_PID=$!
  if wait_health "http://127.0.0.1:$PORT"; then
    echo "PASS sglang started"
    probe_checks sglang "http://127.0.0.1:$PORT"
  else
    echo "FAIL sglang did not start; last lines of its log:"; tail -30 "$WORK/sglang.log"; fail=1
  fi
  kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
else
  echo "SKIP sglang (set SGLANG_PY to an interpreter that imports sglang)"
fi

echo "work folder (logs, probe reports, profiles): $WORK"
exit $fail
