"""`CheckOptions`: the deployment (the engine flags the pair will be launched with, whichever door they came in
by: check's options, `check --launch`, `serve`'s command, a launch file; `deployment.commands`), and how the deep
inspection runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["CheckOptions", "OPTION_FLAGS"]


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
}
