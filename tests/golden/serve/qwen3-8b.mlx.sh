# dflash-check serve: mlx launch command, checked by the rules (0 errors, 0
#   warnings, 0 infos)
# --block-size 16 = the draft's block_size (the anchor included)
# one response from dflash 0.1.0's own model code; needs
#   `pip install --no-deps dflash==0.1.0` and dflash-compat[mlx]
#   (docs/serving.md)
python -m dflash_compat.serve.dflash_run mlx \
    --model examples/qwen3-8b/target \
    --draft examples/qwen3-8b/draft \
    --block-size 16 \
    --max-new-tokens 128 \
    -- 'Write a short story about a robot who learns to paint.'
