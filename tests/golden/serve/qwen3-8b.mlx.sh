# dflash-check serve: mlx launch command, checked by the rules (0 errors, 0
#   warnings, 0 infos)
# --block-size 16 = the draft's block_size (the anchor included)
dflash generate mlx \
    --model examples/qwen3-8b/target \
    --draft examples/qwen3-8b/draft \
    --block-size 16 'Write a short story about a robot who learns to paint.'
