"""Converting a DFlash draft between the z-lab and speculators formats: the config, and the tensor names.

Pure data in, data out: `plan_conversion` returns the new config.json, the tensor renames and notes, or
raises ConversionError when the other format cannot say the same thing to the engines. The conventions
come from the engines' own readers (paths in the speculators 0.9.0 and vLLM 0.33.0 wheels):
- ids: speculators `aux_hidden_state_layer_ids` are z-lab `target_layer_ids` + 1 (HF hidden_states
  indices); vLLM's reader subtracts 1 again (vllm/transformers_utils/configs/speculators/algos.py:114-122).
- the last layer: a z-lab id N-1 is written as aux id N, which vLLM captures after the last decoder
  layer, before the final norm (vllm/model_executor/models/llama.py:437-441) -- as it does for the z-lab
  id. speculators' own converter drops it instead (speculators/convert/dflash/converter.py:119-126), which
  leaves fc one feature wider than the ids; we keep it, so fc and the ids stay consistent.
- causality: vLLM reads speculators `sliding_window_non_causal` as `dflash_config.causal` for every
  layer (algos.py:123-126); z-lab drafts without a setting are causal exactly on their sliding layers.
- tensor names: the draft body has the same names in both formats (converter.py:6-10).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from dflash_compat.exceptions import ConversionError
from dflash_compat.specs import DraftSpec
from dflash_compat.specs.families import SPECULATORS_FORMATS
from dflash_compat.specs.tensor_names import canonical, stored_name

__all__ = ["Plan", "plan_conversion", "rename_tensors"]

V2_KEYS = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
# z-lab keys that speculators keeps outside transformer_layer_config, or that only mirror a nested value
_ZLAB_ONLY = ("architectures", "auto_map", "block_size", "mask_token_id", "target_layer_ids", "dflash_config",
              "eagle_aux_hidden_state_layer_ids", "draft_vocab_size", "target_hidden_size", "sample_from_anchor")
# dflash_config keys the speculators format has a place for
_NESTED_OK = {"target_layer_ids", "mask_token_id", "block_size", "causal", "sample_from_anchor", "num_target_layers",
              *V2_KEYS}
# z-lab keys with no speculators equivalent, and their no-op values
_NO_EQUIVALENT = {"input_embedding_scale": 1, "output_multiplier": 1, "final_logit_softcapping": None,
                  "use_aux_hidden_state": True}
# verifier copies speculators keeps for training; not draft weights
_VERIFIER_TENSORS = ("verifier_lm_head.weight", "verifier_norm.weight")


@dataclass
class Plan:
    """What to write: the new config.json, old tensor name -> new, tensors to leave out, and notes."""

    config: dict[str, Any]
    renames: dict[str, str]
    drop: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _fail(spec: DraftSpec, why: str) -> ConversionError:
    return ConversionError(f"draft {spec.source}: cannot convert losslessly: {why}")


def rename_tensors(names: list[str]) -> dict[str, str]:
    """z-lab spelling for every tensor: alias names (encoder.fc, midlayer) made canonical, DFlash 2's
    codebooks without `.weight` (what every engine loads), a wrapper prefix shared by all of them
    ("model.") removed. Refuses two names that would collide."""
    new = {n: canonical(n) for n in names}
    if names and all(v.startswith("model.") for v in new.values()):
        new = {k: v[len("model."):] for k, v in new.items()}
    new = {k: stored_name(v) for k, v in new.items()}
    seen: dict[str, str] = {}
    for old, v in new.items():
        if v in seen:
            raise ConversionError(f"tensors {seen[v]!r} and {old!r} would both be named {v!r}")
        seen[v] = old
    return new


def plan_conversion(spec: DraftSpec, names: list[str], to: str, verifier: Optional[dict[str, Any]] = None) -> Plan:
    """The conversion of a parsed draft (its raw config in spec.raw) to "zlab" or "speculators"."""
    if to == "speculators":
        if spec.format not in ("zlab-v1", "zlab-v2"):
            raise _fail(spec, f"it is a {spec.family} draft; convert --to speculators reads z-lab DFlash v1/v2")
        return _to_speculators(spec, names, verifier or {"name_or_path": None, "architectures": []})
    if to == "zlab":
        if spec.format not in SPECULATORS_FORMATS:
            raise _fail(spec, f"it is a {spec.family} draft; convert --to zlab reads speculators dflash/dflash2")
        return _to_zlab(spec, names)
    raise ConversionError(f"unknown target format {to!r} (zlab or speculators)")


def _ids(spec: DraftSpec) -> list[int]:
    ids = spec.target_layer_ids
    if spec.target_layer_ids_guessed or not ids:
        raise _fail(spec, "the config gives no target_layer_ids (engines guess them differently); add them first")
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise _fail(spec, f"target_layer_ids {ids!r} are not layer indices")
    return list(ids)


def _one_value(spec: DraftSpec, what: str, locations: dict[str, Any], value: Any) -> Any:
    if value is None:
        raise _fail(spec, f"the config gives no {what}; write it into the config first")
    if len(set(map(repr, locations.values()))) > 1:
        raise _fail(spec, f"the config gives two {what} values {locations}; keep the right one")
    return value


def _zlab_causal_all(spec: DraftSpec, raw: dict[str, Any]) -> Optional[bool]:
    """One causality for every layer, as vLLM resolves a z-lab draft (qwen3_dflash.py:62-73); None if mixed."""
    if spec.is_causal is not None:
        return spec.is_causal
    kinds = set(spec.layer_types or ["full_attention"] * spec.num_hidden_layers)
    if kinds == {"sliding_attention"}:
        return True
    return False if "sliding_attention" not in kinds else None


def _check_zlab_keys(spec: DraftSpec, raw: dict[str, Any], ids: list[int]) -> None:
    dflash = raw.get("dflash_config") or {}
    odd = sorted(k for k in dflash if k not in _NESTED_OK and k not in _NO_EQUIVALENT)
    if odd:
        raise _fail(spec, f"dflash_config.{odd[0]} has no speculators equivalent")
    for key, noop in _NO_EQUIVALENT.items():
        value = dflash.get(key, raw.get(key))
        if value is not None and value != noop:
            raise _fail(spec, f"{key} {value!r} has no speculators equivalent (vLLM's speculators reader drops it)")
    eagle = spec.eagle_aux_hidden_state_layer_ids
    if eagle is not None and list(eagle) != [i + 1 for i in ids]:
        raise _fail(spec, f"eagle_aux_hidden_state_layer_ids {eagle} override the DFlash ids in vLLM; "
                    "the speculators format has one list")
    if isinstance(raw.get("eagle_config"), dict):
        raise _fail(spec, "eagle_config has no speculators equivalent")


def _to_speculators(spec: DraftSpec, names: list[str], verifier: dict[str, Any]) -> Plan:
    raw = spec.raw
    ids = _ids(spec)
    block = _one_value(spec, "block_size", spec.block_size_locations, spec.block_size)
    mask = _one_value(spec, "mask_token_id", spec.mask_token_id_locations, spec.mask_token_id)
    if spec.vocab_size is None:
        raise _fail(spec, "the config gives no vocab_size")
    _check_zlab_keys(spec, raw, ids)
    causal = _zlab_causal_all(spec, raw)
    if causal is None:
        raise _fail(spec, "its sliding layers are causal and its full layers are not; vLLM's speculators reader "
                    "applies one sliding_window_non_causal to every layer (algos.py:123-126)")
    v2 = spec.format == "zlab-v2"
    notes = []
    if v2 and any(getattr(spec, k) is None for k in V2_KEYS):
        raise _fail(spec, f"a DFlash 2 draft needs {', '.join(V2_KEYS)}")
    n = spec.num_target_layers
    if isinstance(n, int) and n - 1 in ids:
        notes.append(f"z-lab id {n - 1} (the last of {n} target layers) kept as aux id {n}: vLLM captures it "
                     "after the last layer, as for the z-lab id; speculators' own converter would drop it")
    if "auto_map" in raw:
        notes.append("auto_map dropped: it names remote code, which convert does not copy")
    tlc = {k: v for k, v in raw.items() if k not in _ZLAB_ONLY}
    if isinstance(n, int):
        tlc["num_target_layers"] = n  # kept for the way back; the speculators readers ignore it
    out: dict[str, Any] = {
        "architectures": ["DFlash2DraftModel"] if v2 else ["DFlashSpeculator"],
        "speculators_model_type": "dflash2" if v2 else "dflash",
        "transformer_layer_config": tlc,
        "draft_vocab_size": raw.get("draft_vocab_size", spec.vocab_size),
        "block_size": block,
        "aux_hidden_state_layer_ids": [i + 1 for i in ids],
        "mask_token_id": mask,
        "sliding_window_non_causal": not causal,
    }
    if spec.sample_from_anchor is not None:
        out["sample_from_anchor"] = spec.sample_from_anchor
    if raw.get("target_hidden_size") is not None:
        out["target_hidden_size"] = raw["target_hidden_size"]
    if v2:
        out.update({k: getattr(spec, k) for k in V2_KEYS})
    out["speculators_config"] = {
        "algorithm": out["speculators_model_type"],
        "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": block - 1}],
        "default_proposal_method": "greedy",
        "verifier": verifier,
    }
    return Plan(config=out, renames=rename_tensors(names), notes=notes)


def _to_zlab(spec: DraftSpec, names: list[str]) -> Plan:
    raw = spec.raw
    tlc = raw.get("transformer_layer_config")
    if not isinstance(tlc, dict):
        raise _fail(spec, "the config has no transformer_layer_config object")
    aux = raw.get("aux_hidden_state_layer_ids")
    if not isinstance(aux, list) or not aux or not all(isinstance(a, int) and not isinstance(a, bool) for a in aux):
        raise _fail(spec, "aux_hidden_state_layer_ids is not a non-empty list of layer indices")
    if min(aux) < 1:
        raise _fail(spec, f"aux id {min(aux)} is the embedding output, which a z-lab target_layer_ids cannot name")
    block = _one_value(spec, "block_size", spec.block_size_locations, spec.block_size)
    mask = _one_value(spec, "mask_token_id", spec.mask_token_id_locations, spec.mask_token_id)
    vocab = spec.vocab_size
    if spec.draft_vocab_size is not None and spec.draft_vocab_size != vocab:
        raise _fail(spec, f"draft_vocab_size {spec.draft_vocab_size} != vocab_size {vocab}: a reduced draft "
                    "vocabulary (d2t/t2d) has no z-lab equivalent")
    if any(canonical(n) in ("d2t", "t2d") for n in names):
        raise _fail(spec, "the weights hold d2t/t2d vocabulary maps, which z-lab loaders do not read")
    if spec.target_hidden_size is not None and spec.target_hidden_size != spec.hidden_size:
        raise _fail(spec, f"target_hidden_size {spec.target_hidden_size} != hidden_size {spec.hidden_size}")
    v2 = spec.format == "speculators-dflash2"
    if v2 and any(raw.get(k) is None for k in V2_KEYS):
        raise _fail(spec, f"a dflash2 draft needs {', '.join(V2_KEYS)} (vLLM reads them without defaults)")
    dflash: dict[str, Any] = {"target_layer_ids": [a - 1 for a in aux], "mask_token_id": mask, "block_size": block}
    if v2:
        dflash.update({k: raw[k] for k in V2_KEYS})
    if raw.get("sample_from_anchor") is not None:
        dflash["sample_from_anchor"] = raw["sample_from_anchor"]
    # vLLM: dflash_config.causal = not sliding_window_non_causal (default true) for every layer, unless
    # the layer config sets is_causal; write it only where the z-lab default would differ.
    if tlc.get("is_causal") is None:
        causal = not raw.get("sliding_window_non_causal", True)
        kinds = set(tlc.get("layer_types") or ["full_attention"] * int(tlc.get("num_hidden_layers") or 1))
        if kinds != ({"sliding_attention"} if causal else {"full_attention"}):
            dflash["causal"] = causal
    config = {"architectures": ["DFlash2DraftModel" if v2 else "DFlashDraftModel"], **tlc, "dflash_config": dflash}
    drop = [n for n in names if canonical(n) in _VERIFIER_TENSORS]
    notes = ["speculators_config (proposal methods, verifier) dropped: the z-lab format has no place for it"]
    if drop:
        notes.append(f"{', '.join(drop)} left out: copies of the verifier's, which z-lab loaders do not read")
    kept = [n for n in names if n not in drop]
    return Plan(config=config, renames=rename_tensors(kept), drop=drop, notes=notes)
