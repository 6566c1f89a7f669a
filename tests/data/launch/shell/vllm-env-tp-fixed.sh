#!/bin/bash
# TP comes from the CI job's environment
pip install "vllm==0.33.0"
vllm serve Qwen/Qwen3-8B \
    --speculative-config '{"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 15}' \
    --tensor-parallel-size ${TP:-1} \
    --max-num-seqs 64 --max-num-batched-tokens 2048
