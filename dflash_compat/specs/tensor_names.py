"""The other spellings of DFlash draft tensor names, and the z-lab name each stands for (one table, read by
the weight rules, `convert` and both reference runtimes)."""

from __future__ import annotations

import re

__all__ = ["ALIASES", "CODEBOOKS", "canonical", "stored_name"]

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


# DFlash 2's candidate-selector codebooks are bare parameters in every engine that loads them, so a
# checkpoint stores them without a `.weight` suffix: vLLM 0.33.0 (qwen3_dflash2.py:326-331, nn.Parameter;
# a `.weight` name is a ValueError, model_executor/models/utils.py:313-322), SGLang 0.5.23
# (srt/models/dflash.py:1166-1171; an unknown name is skipped, dflash.py:943-945), speculators 0.9.0
# (models/dflash2/model_definitions.py:261-262), the dflash MLX loader (model_mlx.py:478-481 pops the bare
# key) and the dflash transformers loader (model.py:631-637 maps the bare key onto its nn.Embedding).
CODEBOOKS = ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook")


def stored_name(name: str) -> str:
    """The name a tensor is written under in a draft checkpoint: the codebooks without `.weight`."""
    for book in CODEBOOKS:
        if name == f"{book}.weight":
            return book
    return name
