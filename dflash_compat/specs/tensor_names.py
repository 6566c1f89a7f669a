"""The other spellings of DFlash draft tensor names, and the z-lab name each stands for (one table, read by
the weight rules, `convert` and both reference runtimes)."""

from __future__ import annotations

import re

__all__ = ["ALIASES", "canonical"]

# Names other exports use for backbone tensors. vLLM maps all three for every family built on its
# DFlash model (vllm/model_executor/models/qwen3_dflash.py:391-402); SGLang maps the two encoder names
# (srt/models/dflash.py:900-903) and ignores `midlayer`; transformers' Muse-Glimmer assistant owns
# `encoder.*`: encoder.fc then encoder.output_norm_enc, the order of z-lab's fc then hidden_norm
# (models/muse_glimmer_assistant/modeling_muse_glimmer_assistant.py:294-310).
ALIASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9_])encoder\.output_norm_enc(?=\.|$)"), "hidden_norm"),
    (re.compile(r"(?<![A-Za-z0-9_])encoder\.fc(?=\.|$)"), "fc"),
    (re.compile(r"(?<![A-Za-z0-9_])midlayer(?=\.|$)"), "layers.0"),
)


def canonical(name: str) -> str:
    """A tensor name with the alias spellings replaced by the z-lab ones."""
    for pattern, new in ALIASES:
        name = pattern.sub(new, name)
    return name
