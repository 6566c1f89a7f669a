# dflash-check serve: sglang launch command, checked by the rules (0 errors, 0
#   warnings, 0 infos)
# --speculative-num-draft-tokens 16 = block_size (SGLang counts the anchor
#   token)
# SGLang limits DFLASH to 48 running requests unless --max-running-requests is
#   given (pass --max-num-seqs to set it)
python -m sglang.launch_server \
    --model-path examples/qwen3-8b/target \
    --speculative-algorithm DFLASH \
    --speculative-draft-model-path examples/qwen3-8b/draft \
    --speculative-num-draft-tokens 16 \
    --tp-size 1 \
    --enable-metrics
