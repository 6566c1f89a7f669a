# dflash-check serve: transformers launch command, checked by the rules (0
#   errors, 0 warnings, 0 infos)
# --block-size 16 = the draft's block_size (the anchor included)
# the dflash transformers path runs on cuda:0 in bfloat16 (dflash/cli.py:63,
#   dflash/benchmark.py:87); `dflash-check smoke` runs the same pair on CPU
# transformers 5.24's own generate(assistant_model=...,
#   speculation_type="dflash") reads top-level target_layer_ids / block_size /
#   mask_token_id from the assistant config
#   (transformers/generation/candidate_generator.py:1535-1539): z-lab drafts
#   keep them nested
dflash generate transformers \
    --model examples/qwen3-8b/target \
    --draft examples/qwen3-8b/draft \
    --block-size 16 'Write a short story about a robot who learns to paint.'
