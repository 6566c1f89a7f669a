# dflash-check serve: vllm launch command, checked by the rules (0 errors, 0
#   warnings, 1 info)
# DF311 info [vllm]: vLLM builds without the layer-offset fix (vllm PR #40727;
#   0.33.0 has it) capture the outputs of layers [0, 8, 16, 24, 32] instead of
#   target_layer_ids [1, 9, 17, 25, 33], with no error
# --max-num-batched-tokens 4096 lets all 256 sequences verify K+1 = 16 tokens in
#   one step (vLLM caps concurrency at max_num_batched_tokens // (K+1))
# K = num_speculative_tokens = 15 (block_size 16 - 1: the anchor is not drafted)
vllm serve examples/qwen3-8b/target \
    --speculative-config '{"method": "dflash", "model": "examples/qwen3-8b/draft", "num_speculative_tokens": 15}' \
    --tensor-parallel-size 1 \
    --max-num-seqs 256 \
    --max-num-batched-tokens 4096
