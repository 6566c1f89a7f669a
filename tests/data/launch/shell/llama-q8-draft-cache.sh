#!/usr/bin/env bash
# Serve Qwen3-8B with its DFlash draft on one GPU; draft KV cache quantised to save memory.
set -euo pipefail

MODELS=/srv/models
PORT=8080

exec llama-server \
  -m "$MODELS/Qwen3-8B-Q4_K_M.gguf" \
  -md "$MODELS/Qwen3-8B-DFlash-b16-F16.gguf" \
  --spec-type draft-dflash \
  --spec-draft-n-max 15 --spec-draft-p-min 0.75 \
  -ngl 99 -ngld 99 \
  -ctkd q8_0 -ctvd q8_0 \
  --host 0.0.0.0 --port "$PORT"
