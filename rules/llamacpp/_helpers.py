"""What the llama.cpp rules (DF8xx) share: citations of a build's located facts, and the pair as
llama.cpp will see it (a GGUF read directly, a safetensors checkpoint as `convert_hf_to_gguf.py` will
write it). Not a rule: no RULE here."""

from __future__ import annotations

from typing import Any, Optional

from dflash_compat.checker import EngineSource, Location, RuleContext, located
from dflash_compat.rules._common import is_int

__all__ = ["src", "entry_src", "cite", "facts", "target_arch", "llama_layers", "draft_is_gguf", "gguf_loc", "CONVERT"]

CONVERT = "convert_hf_to_gguf.py"


def src(name: str, note: Optional[str] = None) -> EngineSource:
    """A rule's citation of the llama.cpp code behind a located fact (the newest bundled build's lines; a check
    cites the selected build's: `cite`)."""
    return located("llama.cpp", name, note=note)


def entry_src(kind: str, name: str) -> EngineSource:
    return located("llama.cpp", name, kind=kind)


def cite(ctx: RuleContext, name: str) -> str:
    """A located fact's lines in the llama.cpp build this check judges against."""
    return ctx.engine("llama.cpp").where(name).cite()


def facts(ctx: RuleContext) -> dict[str, Any]:
    """The facts of the llama.cpp build this check judges against."""
    return ctx.engine("llama.cpp").facts


def draft_is_gguf(ctx: RuleContext) -> bool:
    return ctx.draft.gguf is not None


def target_arch(ctx: RuleContext) -> tuple[Optional[str], str]:
    """(the GGUF architecture llama.cpp runs the target as, how we know): the GGUF's own
    general.architecture, else what the converter writes for the checkpoint's `architectures`."""
    t = ctx.target
    if t.gguf is not None:
        return t.gguf.architecture, "general.architecture"
    conv = facts(ctx)["converter_architectures"]
    for a in t.architectures:
        if isinstance(a, str) and a in conv:
            return conv[a], f"{CONVERT} maps {a} to it"
    return None, ""


def llama_layers(ctx: RuleContext) -> Optional[list[Any]]:
    """The `dflash.target_layers` llama.cpp will read (layer *inputs*): the GGUF's own list, else the
    converter's target_layer_ids + 1; None when there is none (a GGUF without the key, a checkpoint
    whose ids are not written in its config)."""
    d = ctx.draft
    if d.gguf is not None:
        value = d.gguf.get("dflash.target_layers")
        return value if isinstance(value, list) else None
    if d.target_layer_ids is None or d.target_layer_ids_guessed:
        return None
    return [i + 1 if is_int(i) else i for i in d.target_layer_ids]


def gguf_loc(ctx: RuleContext, artifact: str, key: str) -> Location:
    spec = ctx.draft if artifact == "draft" else ctx.target
    file = spec.gguf.file if spec.gguf is not None else spec.config_file
    return Location(artifact=artifact, file=file, key=key)
