"""Every rule, in code order. An explicit list: no import-time self-registration, no globbing."""

from __future__ import annotations

from dflash_compat.engine import Rule

from . import (
    df101_hidden_size_mismatch,
)

__all__ = ["ALL_RULES", "RULES_BY_CODE", "get_rule"]

ALL_RULES: list[Rule] = [
    # --- DF0xx: inputs the checker cannot fully judge ---
    # --- DF1xx: the common contract, from configs ---
    df101_hidden_size_mismatch.RULE,
    # --- DF2xx: transformers (reference PyTorch runtime) ---
    # --- DF3xx: vLLM ---
    # --- DF4xx: SGLang ---
    # --- DF5xx: MLX ---
    # --- DF6xx: draft weights (safetensors headers) ---
    # --- DF7xx: target module tree (meta device) ---
]

RULES_BY_CODE: dict[str, Rule] = {r.code: r for r in ALL_RULES}


def get_rule(code: str) -> Rule | None:
    return RULES_BY_CODE.get(code.upper())
