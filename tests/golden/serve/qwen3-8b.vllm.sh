# dflash-check serve: vllm launch command, checked by the rules (0 errors, 0
#   warnings, 0 infos)
# --max-num-batched-tokens 4096 lets all 256 sequences verify K+1 = 16 tokens in
#   one step (vLLM caps concurrency at max_num_batched_tokens // (K+1))
# K = num_speculative_tokens = 15 (block_size 16 - 1: the anchor is not drafted)
vllm serve examples/qwen3-8b/target \
    --speculative-config.method dflash \
    --speculative-config.model examples/qwen3-8b/draft \
    --speculative-config.num_speculative_tokens 15 \
    --tensor-parallel-size 1 \
    --max-num-seqs 256 \
    --max-num-batched-tokens 4096
