"""The DFlash draft families the engines load, and how a config.json is told apart from other drafts.

Pure data and string matching: no engine is imported. Where each name is registered is in
`dflash_compat/engines/data/draft_families.json` (with file:line per engine) and docs/families.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional

from dflash_compat.exceptions import ConfigError

__all__ = [
    "DraftFormat",
    "Family",
    "FAMILIES",
    "DFLASH_PACKAGE_FORMATS",
    "SPECULATORS_FORMATS",
    "V2_FORMATS",
    "detect_format",
    "not_a_dflash_draft",
]

DraftFormat = Literal[
    "zlab-v1",
    "zlab-v2",
    "dflash2-beam",
    "ricursive-dflash2",
    "minimax-dflash2",
    "muse-glimmer-assistant",
    "qwen3-xpress",
    "lilicorr",
    "laguna-dflash",
    "domino",
    "speculators",  # speculators `dflash` (the name predates the other families; kept for its readers)
    "speculators-dflash2",
    "unknown",
]


@dataclass(frozen=True)
class Family:
    """One draft family: the names that select it and the checkpoint layout it uses."""

    format: str
    title: str
    architectures: tuple[str, ...] = ()
    layout: str = "zlab"  # "zlab": dflash_config / top-level keys; "speculators": transformer_layer_config
    v2_layers: bool = False  # grouped convolutions around attention and MLP, and a candidate selector
    weights_modelled: bool = True  # whether rules/weights/_draft_tensors.py knows every tensor this family holds


FAMILIES: dict[str, Family] = {f.format: f for f in (
    Family("zlab-v1", "z-lab DFlash (v1)", ("DFlashDraftModel",)),
    Family("zlab-v2", "z-lab DFlash 2", ("DFlash2DraftModel",), v2_layers=True),
    Family("dflash2-beam", "DFlash2-Beam", ("DFlash2BeamDraftModel",), v2_layers=True),
    # DFlash 2 whose `no_rope_layers` skip RoPE (vLLM 0.34 ricursive_dflash2.py); the weights are DFlash 2's.
    Family("ricursive-dflash2", "Ricursive DFlash 2 (NoPE layers)", ("DFlash2RicursiveDraftModel",), v2_layers=True),
    Family("minimax-dflash2", "MiniMax DFlash2", ("MiniMaxDFlash2DraftModel",), v2_layers=True),
    Family("muse-glimmer-assistant", "Muse-Glimmer assistant",
           ("MuseGlimmerAssistantModel", "DFlashMuseGlimmerAssistantModel")),
    Family("qwen3-xpress", "Qwen3-XPress (DFlash + refiner)", ("Qwen3XPressModel", "DFlashQwen3XPressModel")),
    Family("lilicorr", "LiLiCorr (DFlash + lattice correlator)", ("LiLiCorrDraftModel",)),
    # Laguna drafts use the target's own decoder layers; their tensors are not modelled here.
    Family("laguna-dflash", "Laguna DFlash", ("DFlashLagunaForCausalLM",), weights_modelled=False),
    Family("domino", "DFlash with a Domino projector"),
    Family("speculators", "speculators dflash", ("DFlashSpeculator",), layout="speculators"),
    Family("speculators-dflash2", "speculators dflash2", layout="speculators", v2_layers=True),
    Family("unknown", "unrecognised DFlash-style draft", weights_modelled=False),
)}

# The families the dflash package itself builds (dflash.model / dflash.model_mlx), and so the reference runtime.
DFLASH_PACKAGE_FORMATS = frozenset({"zlab-v1", "zlab-v2"})
SPECULATORS_FORMATS = frozenset(f.format for f in FAMILIES.values() if f.layout == "speculators")
V2_FORMATS = frozenset(f.format for f in FAMILIES.values() if f.v2_layers)

# Checked in this order: the more specific names first (a config may list several).
_BY_ARCH = [(a, f.format) for f in FAMILIES.values() if f.layout == "zlab" for a in f.architectures]
_V2_KEYS = ("conv_kernel_size", "selector_rank")
_SPECULATORS_TYPES = {"dflash": "speculators", "dflash2": "speculators-dflash2"}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _archs(raw: dict[str, Any]) -> list[str]:
    archs = raw.get("architectures")
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def detect_format(raw: dict[str, Any], where: str = "config.json") -> Optional[str]:
    """The family a draft config.json belongs to; "unknown" for a DFlash-looking config of no known
    family; None when it is no DFlash draft at all (`not_a_dflash_draft` then says what it is).
    ConfigError (`where` names the file) when speculators_model_type, a registry key, is no string."""
    archs = _archs(raw)
    dflash = _dict(raw.get("dflash_config"))
    # vLLM treats any config with a `speculators_config` as speculators format (transformers_utils/config.py).
    spec_type = raw.get("speculators_model_type")
    if spec_type is not None and not isinstance(spec_type, str):
        got = repr(spec_type)
        got = got if len(got) <= 80 else got[:77] + "..."
        raise ConfigError(f'{where}: `speculators_model_type` should be a string such as "dflash" (got {got})')
    if spec_type is not None or "speculators_config" in raw or "DFlashSpeculator" in archs:
        return _SPECULATORS_TYPES.get(spec_type) if spec_type is not None else "speculators"
    # SGLang reads projector_type nested first, then top-level (srt/speculative/dflash_utils.py).
    if dflash.get("projector_type", raw.get("projector_type")) == "domino":
        return "domino"
    for arch, fmt in _BY_ARCH:
        if arch in archs:
            if fmt == "zlab-v1" and any(k in dflash for k in _V2_KEYS):
                return "zlab-v2"
            return fmt
    if raw.get("model_type") == "muse_glimmer_assistant":
        return "muse-glimmer-assistant"
    if "LagunaForCausalLM" in archs and dflash:
        return "laguna-dflash"  # vLLM's method=dflash renames it DFlashLagunaForCausalLM
    if not archs and dflash:
        return "zlab-v2" if any(k in dflash for k in _V2_KEYS) else "zlab-v1"
    if not_a_dflash_draft(raw, strict=True):
        return None
    if _dflash_looking(raw, archs, dflash):
        return "unknown"
    return None


def _dflash_looking(raw: dict[str, Any], archs: list[str], dflash: dict[str, Any]) -> bool:
    """A hidden-state-conditioned block drafter: DFlash-named, or layer ids with a mask token or block."""
    if dflash or any(a.startswith("DFlash") or a.endswith("DFlash") for a in archs):
        return True
    has_ids = isinstance(raw.get("target_layer_ids"), list)
    return has_ids and (raw.get("mask_token_id") is not None or raw.get("block_size") is not None)


# (what it looks like, test on lower-cased architecture names / model_type / keys)
_OTHER_DRAFTS = (
    ("an EAGLE-3 draft", lambda a, t, k: any("eagle3" in x for x in a) or t in ("eagle3", "peagle")),
    ("an EAGLE draft", lambda a, t, k: any("eagle" in x for x in a) or t == "eagle"),
    ("a Medusa draft", lambda a, t, k: any("medusa" in x for x in a) or "medusa_num_heads" in k),
    ("a DSpark draft (vLLM serves it with method \"dspark\", not \"dflash\")",
     lambda a, t, k: any("dspark" in x for x in a) or t == "dspark" or "dspark_target_layer_ids" in k),
    ("an MTP draft (multi-token-prediction layers)",
     lambda a, t, k: any(x.endswith(("mtp", "mtpmodel")) for x in a) or t.endswith("_mtp")),
)
_LM_SUFFIXES = ("forcausallm", "lmheadmodel", "forconditionalgeneration")


def not_a_dflash_draft(raw: dict[str, Any], strict: bool = False) -> Optional[str]:
    """What a non-DFlash config looks like ("an EAGLE-3 draft"), or None. `strict`: only the other
    speculative methods (a config that names one is never a DFlash draft, whatever keys it has)."""
    archs = [a.lower() for a in _archs(raw)]
    mtype = str(raw.get("model_type") or "").lower()
    spec_type = str(raw.get("speculators_model_type") or "").lower()
    keys = set(raw)
    for what, test in _OTHER_DRAFTS:
        if test(archs, spec_type or mtype, keys):
            return what
    if strict:
        return None
    if spec_type:
        return f"a speculators {spec_type!r} draft"
    if any(a.endswith(_LM_SUFFIXES) for a in archs):
        return "a language model"
    return None
