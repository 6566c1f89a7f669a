"""`init-draft`: write a z-lab DFlash draft (config, optional weights) for a target, derived from its config.

    from dflash_compat.init_draft import InitOptions, init_draft
    result = init_draft("Qwen/Qwen3-8B", "my-draft", InitOptions(layers=5))

Config derivation and the mask token choice are pure Python; torch is imported only for weights.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from dflash_compat.exceptions import ConfigError, InputError
from dflash_compat.init_draft.config import Derived, DraftShape, derive_draft_config
from dflash_compat.init_draft.tokens import MaskChoice, check_mask_token, choose_mask_token, read_tokenizer_facts
from dflash_compat.resolve.refs import Resolved, load_json, resolve
from dflash_compat.specs import TargetSpec, parse_draft_config
from dflash_compat.specs.tensor_names import stored_name

__all__ = ["InitOptions", "InitResult", "init_draft", "plan_draft", "check_output", "WEIGHT_CHOICES"]

WEIGHT_CHOICES = ("none", "random", "from-target")
_OUR_FILES = ("config.json", "model.safetensors")


@dataclass(frozen=True)
class InitOptions:
    layers: int = 5
    block_size: int = 16
    layer_ids: Optional[Sequence[int]] = None
    mask_token_id: Optional[int] = None
    version: int = 1
    weights: str = "none"  # none | random | from-target
    seed: int = 0
    dtype: str = "bfloat16"
    force: bool = False
    token: Optional[str] = None


@dataclass
class InitResult:
    folder: Path
    config: dict
    mask: MaskChoice
    notes: list[str] = field(default_factory=list)
    weights: str = "none"
    copied_tensors: int = 0


def _target_spec(resolved: Resolved) -> TargetSpec:
    from dflash_compat.pipeline.check import load_target

    return load_target(resolved)


def _tokenizer_json(resolved: Resolved) -> Optional[dict]:
    """tokenizer.json of a local target (large, so it is not among the files a Hub check fetches);
    a broken one only costs the spare-row choice."""
    path = resolved.folder / "tokenizer.json"
    if resolved.is_hub or not path.is_file():
        return None
    try:
        value = load_json(path)
    except ConfigError:
        return None
    return value if isinstance(value, dict) else None


def _chat_template(resolved: Resolved) -> str:
    """chat_template.jinja of a local target (a bounded read of a regular file); a broken one only costs
    the stop tokens it would name."""
    from dflash_compat.files.safe_read import MAX_CONFIG_BYTES, read_text

    path = resolved.folder / "chat_template.jinja"
    if not path.is_file():
        return ""
    try:
        return read_text(path, MAX_CONFIG_BYTES)
    except InputError:
        return ""


def plan_draft(target: str, options: InitOptions) -> tuple[Resolved, TargetSpec, Derived, MaskChoice]:
    """Everything init-draft decides, without writing anything."""
    if options.weights not in WEIGHT_CHOICES:
        raise InputError(f"--weights {options.weights}: expected one of {', '.join(WEIGHT_CHOICES)}")
    resolved = resolve(target, "target", token=options.token)
    spec = _target_spec(resolved)
    if spec.auto_map:
        raise ConfigError(f"target {target}: its config maps to the repository's own code (auto_map); "
                          "init-draft derives drafts only for architectures it can read from config alone")
    facts = read_tokenizer_facts(resolved.json("tokenizer_config.json"), _tokenizer_json(resolved),
                                 _chat_template(resolved))
    if options.mask_token_id is not None:
        check_mask_token(spec, facts, options.mask_token_id)
        mask = MaskChoice(options.mask_token_id, "given with --mask-token-id")
    else:
        mask = choose_mask_token(spec, facts)
    shape = DraftShape(layers=options.layers, block_size=options.block_size, layer_ids=options.layer_ids,
                       mask_token_id=mask.token_id, version=options.version, dtype=options.dtype)
    derived = derive_draft_config(spec, shape)
    parse_draft_config(derived.config, "init-draft")  # our own output must read back as a draft
    return resolved, spec, derived, mask


def check_output(out: str | os.PathLike, target: str, force: bool) -> Path:
    """OUT, checked before the target is read (safe_write's folder rules): never at, inside or around the
    target's folder or the Hugging Face cache, never through a symlink, a non-empty folder only with
    --force, and then never one holding other weights that loaders would mix with the new draft."""
    from dflash_compat.files.safe_write import check_output_folder, model_folders

    folder = check_output_folder(out, force=force, protected=model_folders(target), fill=True,
                                 hint="pass --force to overwrite its config.json and model.safetensors")
    if not folder.is_dir() or folder.is_symlink():  # new, or a link --force replaces by a folder
        return folder
    present = sorted(p.name for p in folder.iterdir())
    others = [n for n in present if n.endswith((".safetensors", ".safetensors.index.json")) and n not in _OUR_FILES]
    if others:
        raise InputError(f"-o {out}: holds other weight files ({', '.join(others[:3])}) that loaders would mix "
                         "with the new draft; choose an empty folder")
    return folder


def init_draft(target: str, out: str | os.PathLike, options: InitOptions = InitOptions()) -> InitResult:
    """Derive the draft config for `target`, write it (and weights, if asked) to `out`."""
    from dflash_compat.files.safe_write import make_output_folder, write_output

    folder = check_output(out, target, options.force)
    resolved, spec, derived, mask = plan_draft(target, options)
    result = InitResult(Path(out), derived.config, mask, list(derived.notes), options.weights)
    state = _initial_weights(resolved, spec, derived.config, options, result) if options.weights != "none" else None
    make_output_folder(folder)
    # files of a folder checked above: a link or an old file in their place is replaced itself (force)
    write_output(folder / "config.json", json.dumps(derived.config, indent=2) + "\n", force=True)
    stale = folder / "model.safetensors"
    if state is not None:
        from safetensors.torch import save

        write_output(stale, save({stored_name(k): v.contiguous() for k, v in state.items()}, metadata={"format": "pt"}),
                     force=True)
    elif os.path.lexists(stale):  # --force over an old draft: its weights no longer match the new config
        try:
            os.unlink(stale)
        except OSError as exc:
            raise InputError(f"-o {out}: cannot remove the old {stale.name} ({exc.strerror or exc})") from None
    return result


def _initial_weights(resolved: Resolved, spec: TargetSpec, config: dict, options: InitOptions,
                     result: InitResult) -> dict:
    try:
        import torch
    except ImportError:
        from dflash_compat.exceptions import MissingDependencyError

        raise MissingDependencyError("--weights needs torch: pip install 'dflash-compat[torch]'") from None
    from dflash_compat.init_draft import weights
    from dflash_compat.runtime.draft_config import draft_config

    cfg = draft_config(parse_draft_config(config, str(result.folder)))
    module = weights.new_draft_module(cfg, config, getattr(torch, options.dtype))
    if options.weights == "random":
        return weights.random_state(module, options.seed)
    from dflash_compat.resolve.refs import download_weights

    folder = download_weights(resolved, token=options.token)
    norm_offset = str(spec.text_model_type or spec.model_type or "").startswith("gemma")
    state, result.copied_tensors = weights.state_from_target(module, folder, spec.num_hidden_layers, norm_offset,
                                                             options.seed)
    return state
