"""Train a DFlash draft for a target: the published recipe, compact (`dflash-check train`).

    from dflash_compat.train import TrainConfig, train
    result = train("my-target", "my-draft", "corpus/", "trained-draft", TrainConfig(steps=2000))
    result.tau, result.history

The target is frozen; the draft is our runtime's own module (`runtime.torch_draft`), trained
through its `forward_masked` entry point, so what is trained is exactly what is served. Recipe:
docs/training.md. Importing this package imports no torch; `train` does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

from dflash_compat.exceptions import (
    ConfigError,
    InputError,
    MissingDependencyError,
    RuntimeUnsupportedError,
    WeightsError,
    one_line,
)
from dflash_compat.train.config import LABEL_CHOICES, TrainConfig, default_gamma

__all__ = ["TrainConfig", "TrainResult", "train", "prepare", "check_out", "default_gamma", "LABEL_CHOICES"]


def _device(name: str):
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA GPU is available to this torch build")
    return torch.device(name)


def check_out(out: str, target: str, draft: str, resume: bool, force: bool) -> Path:
    """OUT, checked before anything is loaded (safe_write's folder rules): never at, inside or around the
    target, the draft or the Hugging Face cache, never through a symlink; a non-empty folder only to
    continue its checkpoint (--resume) or, with --force, to train into it from scratch."""
    from dflash_compat.files.safe_write import check_output_folder, model_folders
    from dflash_compat.train.checkpoint import CHECKPOINT_DIR, checkpoint_files

    protected = model_folders(target, draft)
    if not resume:
        folder = check_output_folder(out, force=force, protected=protected, fill=True,
                                     hint="pass --resume to continue its checkpoint or --force to train from "
                                     "scratch into it")
        ckpt = folder / CHECKPOINT_DIR
        if force and os.path.lexists(ckpt) and not (ckpt.is_dir() or ckpt.is_symlink()):
            raise InputError(f"-o {out}: {CHECKPOINT_DIR} in it is not a folder; remove it or choose another -o")
        return folder
    # continuing: OUT is ours, a real folder (never a link) holding a readable checkpoint
    folder = check_output_folder(out, force=True, protected=protected, fill=True)
    if folder.is_symlink() or not folder.is_dir():
        raise InputError(f"--resume: -o {out} is not a folder holding a checkpoint; train without --resume first")
    checkpoint_files(folder)
    return folder


def _load_draft_module(ref: str, device, seed: int, token: Optional[str]):
    """Our draft module in float32 with the draft's weights, or seeded random ones for a config-only
    draft (what `init-draft --weights none` writes). -> (module, its config.json dict)."""
    from dflash_compat.files.weightfiles import weight_paths
    from dflash_compat.init_draft.weights import new_draft_module, random_state
    from dflash_compat.resolve.refs import download_weights, resolve
    from dflash_compat.runtime.draft_config import draft_config
    from dflash_compat.runtime.torch_draft import load_draft_weights
    from dflash_compat.specs import parse_draft_config

    resolved = resolve(ref, "draft", token=token)
    raw = resolved.json("config.json")
    cfg = draft_config(parse_draft_config(raw, ref))
    if cfg.version != 1:
        raise RuntimeUnsupportedError(f"draft {ref}: train supports DFlash v1 drafts (DFlashDraftModel) only")
    module = new_draft_module(cfg, raw)
    folder = download_weights(resolved, token=token)
    files = weight_paths(folder, f"draft {ref}")  # the checked lookup: regular files inside the folder
    if files:
        state = load_draft_weights(folder, files)
        expected = {k: tuple(v.shape) for k, v in module.state_dict().items()}
        if {k: tuple(v.shape) for k, v in state.items()} != expected:
            raise WeightsError(f"draft {ref}: its weights do not match its config.json (names or shapes differ)")
        module.load_state_dict({k: v.float() for k, v in state.items()})
    else:
        random_state(module, seed)
    return module.to(device), raw


def _tokenizer(folder: Path, ref: str):
    from transformers import AutoTokenizer

    from dflash_compat.files.safe_read import check_tokenizer_files

    check_tokenizer_files(folder, f"target {ref}", error=ConfigError)  # bounded, typed JSON before transformers
    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except Exception as exc:  # noqa: BLE001 - a foreign parser on an untrusted file (tokenizers raises bare Exception)
        raise ConfigError(f"target {ref}: cannot load its tokenizer to read --data ({one_line(exc)})") from None


def prepare(target: str, draft: str, data: str, out: str, config: TrainConfig, *, resume: bool = False,
            force: bool = False, token: Optional[str] = None):
    """Load and check everything a training run needs; -> loop.Session. Raises one-line errors."""
    from dflash_compat.resolve.refs import resolve
    from dflash_compat.train import data as data_mod

    config.validate()
    t_res = resolve(target, "target", token=token)
    out_path = check_out(out, target, draft, resume, force)
    # the data first: a bad file fails in a second, before torch is imported or any model loaded
    docs = data_mod.read_documents(data, config.max_documents)
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise MissingDependencyError("train needs torch and transformers: pip install 'dflash-compat[torch]'") from None
    from dflash_compat.files.safe_write import make_output_folder
    from dflash_compat.files.weightfiles import weight_paths
    from dflash_compat.resolve.refs import download_weights
    from dflash_compat.runtime.torch_generate import check_pairing, load_target, stop_tokens_of
    from dflash_compat.train import checkpoint, loop

    device = _device(config.device)
    t_folder = Path(download_weights(t_res, token=token))
    if not weight_paths(t_folder, f"target {target}"):  # the checked lookup before any file is loaded
        raise WeightsError(f"target {target}: no *.safetensors weights (pickled .bin weights are never loaded)")
    tokenizer = _tokenizer(t_folder, target)
    eos = tokenizer.eos_token_id if isinstance(tokenizer.eos_token_id, int) else None
    tokens = data_mod.tokenize_documents(docs, tokenizer, config.held_out, config.seed, eos)
    module, raw = _load_draft_module(draft, device, config.seed, token)
    ids, mask = data_mod.pack(tokens.train, config.seq_len, eos, module.block_size + 2)
    prompts = [d[:config.eval_prompt_tokens] for d in tokens.held_out if len(d) >= 4][:config.eval_prompts]
    adapter = load_target(t_folder, device=device, dtype=torch.bfloat16 if device.type == "cuda" else torch.float32)
    adapter.model.requires_grad_(False)
    check_pairing(module, adapter)
    session = loop.Session(config, out_path, adapter, module, raw, ids, mask, prompts, stop_tokens_of(adapter), device)
    session.optimizer = loop.make_optimizer(module, config)
    session.data_summary = {"documents": len(docs), "tokens": tokens.total_tokens, "train_sequences": int(ids.shape[0]),
                            "held_out_documents": len(tokens.held_out), "eval_prompts": len(prompts)}
    if resume:
        session.start_step, saved, session.history = checkpoint.load_checkpoint(out_path, module, session.optimizer)
        if saved and saved != raw:
            raise InputError(f"--resume: the checkpoint in {out_path} was made for another draft config")
        if session.start_step >= config.steps:
            raise InputError(f"--resume: the checkpoint is at step {session.start_step}; pass --steps above it")
    make_output_folder(out_path)
    return session


def train(target: str, draft: str, data: str, out: str, config: Optional[TrainConfig] = None, *,
          resume: bool = False, force: bool = False, progress: bool = True, token: Optional[str] = None,
          log: Optional[Callable[[str], None]] = None):
    """Train DRAFT for TARGET on DATA and export it to OUT (z-lab format); -> loop.TrainResult."""
    session = prepare(target, draft, data, out, config or TrainConfig(), resume=resume, force=force, token=token)
    from dflash_compat.train.loop import run_training  # torch: imported once the inputs and OUT passed their checks

    return run_training(session, progress=progress, log=log)


def __getattr__(name: str):  # TrainResult lives with the loop, which imports torch
    if name == "TrainResult":
        from dflash_compat.train.loop import TrainResult

        return TrainResult
    raise AttributeError(name)
