"""`CheckOptions`: the deployment (the engine flags the pair will be launched with, whichever door they came in
by: check's options, `check --launch`, `serve`'s command, a launch file; `deployment.commands`), and how the deep
inspection runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["LMDEPLOY_QUANT_POLICIES", "CheckOptions", "OPTION_FLAGS", "lmdeploy_quant_policy"]

# lmdeploy's --quant-policy names and numbers (0.18.0 messages.py:20-27 QuantPolicy, cli/utils.py:260-279)
LMDEPLOY_QUANT_POLICIES = {"none": 0, "int4": 4, "int8": 8, "fp8": 16, "fp8_e4m3": 16, "fp8_e5m2": 17,
                           "turbo_quant": 42}


def lmdeploy_quant_policy(value: Optional[str]) -> Optional[int]:
    """`--quant-policy` as lmdeploy parses it (a name or one of its numbers); InputError otherwise."""
    from dflash_compat.exceptions import InputError

    if value is None:
        return None
    text = str(value).strip().lower()
    if text in LMDEPLOY_QUANT_POLICIES:
        return LMDEPLOY_QUANT_POLICIES[text]
    if text.isdigit() and int(text) in set(LMDEPLOY_QUANT_POLICIES.values()):
        return int(text)
    raise InputError(f"--quant-policy {value!r}: expected one of {', '.join(LMDEPLOY_QUANT_POLICIES)} or "
                     "0/4/8/16/17/42")


@dataclass(frozen=True)
class CheckOptions:
    """Engine flags the user intends to launch with (None: not given, use the engine default)."""

    # The engine the options were read from a command of (None: check's own options, for any engine).
    engine: Optional[str] = None
    # True: a whole launch command, so an option it does not give is the engine's default; False: check's own
    # options, which may leave out what the launch passes.
    complete: bool = False

    num_speculative_tokens: Optional[int] = None
    tp: int = 1
    draft_tp: Optional[int] = None
    sglang_num_draft_tokens: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    # SGLang launch options (DF401, DF405, DF410-DF413); None / default: not given.
    sglang_dflash_block_size: Optional[int] = None  # --speculative-dflash-block-size
    sglang_draft_window_size: Optional[int] = None  # --speculative-draft-window-size
    sglang_attn_dp_size: Optional[int] = None  # --attn-dp-size (attention data parallelism when > 1)
    sglang_enable_dp_lm_head: bool = False  # --enable-dp-lm-head
    sglang_draft_attention_backend: Optional[str] = None  # --speculative-draft-attention-backend
    sglang_attn_cp_size: Optional[int] = None  # --attn-cp-size (attention context parallelism when > 1)
    sglang_quantization: Optional[str] = None  # --quantization
    sglang_draft_quantization: Optional[str] = None  # --speculative-draft-model-quantization
    pp_size: int = 1  # pipeline-parallel size
    llamacpp_draft_n_max: Optional[int] = None  # llama.cpp --spec-draft-n-max
    # lmdeploy `serve api_server` options (DF450-DF499); None / default: not given (lmdeploy's own defaults:
    # TurboMind backend, dp 1, ep 1, no prefix caching, quant policy 0, dtype auto, 1 draft token, cuda).
    lmdeploy_backend: Optional[str] = None  # --backend pytorch | turbomind
    lmdeploy_dp: Optional[int] = None  # --dp
    lmdeploy_ep: Optional[int] = None  # --ep
    lmdeploy_prefix_caching: bool = False  # --enable-prefix-caching
    lmdeploy_quant_policy: Optional[int] = None  # --quant-policy (0 4 8 16 17 42)
    lmdeploy_dtype: Optional[str] = None  # --dtype auto | float16 | bfloat16
    lmdeploy_num_draft_tokens: Optional[int] = None  # --speculative-num-draft-tokens
    lmdeploy_block_size: Optional[int] = None  # --speculative-dflash-block-size
    lmdeploy_device: Optional[str] = None  # --device cuda | ascend | maca | camb
    # The vLLM backend's platform: None / "cuda" upstream vLLM; "ascend" vllm-ascend, vLLM's NPU plugin (DF360-DF399)
    vllm_platform: Optional[str] = None
    deep: bool = True
    trust_remote_code: bool = False
    # --adapter FILE_OR_NAME: the deep inspection wraps the target in it, so module rules see the
    # adapted model (a shim file from `dflash-check adapt`, or a built-in adapter name).
    adapter: Optional[str] = None
    # Hub token for the deep checks' remote reads (safetensors headers); None: HF_TOKEN / saved login.
    token: Optional[str] = None


# CheckOptions field -> the option of `check` and `serve` that sets it (for messages)
OPTION_FLAGS = {
    "num_speculative_tokens": "--num-speculative-tokens", "sglang_num_draft_tokens": "--num-draft-tokens",
    "tp": "--tp", "draft_tp": "--draft-tp", "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens", "sglang_attn_dp_size": "--attn-dp-size",
    "sglang_enable_dp_lm_head": "--enable-dp-lm-head", "pp_size": "--pp-size",
    "sglang_dflash_block_size": "--dflash-block-size", "sglang_draft_window_size": "--draft-window-size",
    "sglang_quantization": "--quantization", "sglang_draft_quantization": "--draft-quantization",
    "llamacpp_draft_n_max": "--spec-draft-n-max", "sglang_attn_cp_size": "--attn-cp-size",
    "sglang_draft_attention_backend": "--draft-attention-backend",
    "lmdeploy_num_draft_tokens": "--lmdeploy-num-draft-tokens", "lmdeploy_backend": "--lmdeploy-backend",
    "lmdeploy_dtype": "--lmdeploy-dtype", "lmdeploy_dp": "--lmdeploy-dp", "lmdeploy_ep": "--lmdeploy-ep",
    "lmdeploy_prefix_caching": "--lmdeploy-prefix-caching", "lmdeploy_quant_policy": "--lmdeploy-quant-policy",
    "lmdeploy_block_size": "--lmdeploy-block-size", "lmdeploy_device": "--lmdeploy-device",
    "vllm_platform": "--vllm-platform",
}
