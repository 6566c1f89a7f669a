#!/usr/bin/env bash
# A llama-server launcher in the shape of the scripts llama.cpp users keep next to their models:
# bash arrays, a function, a case on the GPU count, a here-document and a subshell.
set -euo pipefail

MODELS=/models
TARGET="$MODELS/Qwen3-8B-Q4_K_M.gguf"
DRAFT="$MODELS/Qwen3-8B-DFlash-b16-F16.gguf"
GPUS=$(nvidia-smi -L | wc -l)
ARGS=(--host 0.0.0.0 --port 8080 -c 32768)

usage() {
  cat <<USAGE
Usage: $0 [--split]
  starts llama-server with the DFlash draft
USAGE
}

case "$GPUS" in
  1) SPLIT=layer ;;
  *) SPLIT=tensor ;;
esac

(cd "$MODELS" && ls -l *.gguf)
[[ "${1:-}" == "--help" ]] && { usage; exit 0; }

exec llama-server -m "$TARGET" -md "$DRAFT" \
  --spec-type dflash -sm tensor \
  --spec-draft-n-max 16 --spec-draft-p-min 0.75 \
  -ngl 99 -ngld 99 "${ARGS[@]}"
