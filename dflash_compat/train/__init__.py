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


def _device(name: str, local_rank: int = 0):
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA GPU is available to this torch build")
    return torch.device("cuda", local_rank) if name == "cuda" else torch.device(name)


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


def _weights_bytes(folder: Path, ref: str) -> int:
    from dflash_compat.files.weightfiles import weight_paths

    return sum(p.stat().st_size for p in weight_paths(folder, f"target {ref}"))


def _shard_decision(config: TrainConfig, d, device, t_folder: Path, target: str) -> bool:
    """--shard-target: always (needs 2+ ranks), never, or auto: shard when the target's weights take more than
    half of one GPU's memory (on the CPU, auto never shards: the ranks share the machine's memory anyway)."""
    if config.shard_target == "never":
        return False
    if not d.active:
        if config.shard_target == "always":
            raise InputError("--shard-target always: sharding needs 2 or more ranks (--nproc-per-node or torchrun)")
        return False
    if config.shard_target == "always":
        return True
    if device.type != "cuda":
        return False
    import torch

    size = _weights_bytes(t_folder, target)
    if t_folder.joinpath("config.json").is_file():  # stored in float32: loaded in bf16 on a GPU
        size = size // 2 if '"float32"' in t_folder.joinpath("config.json").read_text(errors="replace") else size
    return size > 0.5 * torch.cuda.get_device_properties(device).total_memory


def _regenerated(docs, adapter, tokenizer, config: TrainConfig, d, out_path: Path, resume: bool, sharded: bool,
                 log: Optional[Callable[[str], None]]):
    """--regenerate: the target's own answers to the data's prompts (regenerate.py), shared out over the ranks,
    written to OUT/regenerated.jsonl by rank 0; a resumed run reads that file again (the same data)."""
    from dflash_compat.train.data import load_training_data
    from dflash_compat.train.regenerate import REGENERATED_FILE, regenerate_builtin, write_documents

    cached = out_path / REGENERATED_FILE
    if resume and cached.is_file():
        return load_training_data(str(cached), config)
    if sharded:
        raise InputError("--regenerate runs the built-in runtime, which cannot answer with a sharded target; "
                         "answer the prompts with vLLM or SGLang (--write-prompts, docs/training.md)")
    from dflash_compat.runtime.torch_generate import stop_tokens_of

    mine = docs[d.rank::d.world] if d.active else docs
    if log is not None and d.main:
        log(f"regenerating {len(docs)} answers with the target (up to {config.regenerate_tokens} tokens each)")
    answers = regenerate_builtin(mine, adapter, tokenizer, config.regenerate_tokens, config.prompt_tokens,
                                 stop_tokens_of(adapter))
    if d.active:
        import torch.distributed as dist

        parts: list = [None] * d.world
        dist.all_gather_object(parts, answers)
        answers = [parts[i % d.world][i // d.world] for i in range(len(docs))]  # the data's order, any world
    answers = [a for a in answers if a is not None]
    if not answers:
        raise InputError("--regenerate: no prompt in the data to answer")
    if d.main:
        from dflash_compat.files.safe_write import make_output_folder

        make_output_folder(out_path)
        write_documents(cached, answers)
    return answers


def prepare(target: str, draft: str, data: str, out: str, config: TrainConfig, *, resume: bool = False,
            force: bool = False, token: Optional[str] = None, dist=None, log: Optional[Callable[[str], None]] = None):
    """Load and check everything a training run needs; -> loop.Session. Raises one-line errors.
    `dist`: this rank's place in a torch.distributed run (distributed.session()); None: one process."""
    from dflash_compat.resolve.refs import resolve
    from dflash_compat.train import data as data_mod
    from dflash_compat.train.distributed import SINGLE, agree

    d = dist or SINGLE
    config.validate()
    if config.batch_size * d.world < 1:  # pragma: no cover - validate() keeps batch_size >= 1
        raise InputError("--batch-size must be at least 1")
    t_res = resolve(target, "target", token=token)
    # OUT and the data, checked on rank 0 first (one error line for the whole run), before torch is imported
    # in a single process or any model is loaded
    out_path = agree(d, lambda: check_out(out, target, draft, resume, force), share=True)
    docs = agree(d, lambda: data_mod.load_training_data(data, config))
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

    device = _device(config.device, d.local_rank)
    t_folder = Path(download_weights(t_res, token=token))
    if not weight_paths(t_folder, f"target {target}"):  # the checked lookup before any file is loaded
        raise WeightsError(f"target {target}: no *.safetensors weights (pickled .bin weights are never loaded)")
    tokenizer = _tokenizer(t_folder, target)
    agree(d, lambda: data_mod.check_renderable(docs, tokenizer))
    eos = tokenizer.eos_token_id if isinstance(tokenizer.eos_token_id, int) else None
    module, raw = _load_draft_module(draft, device, config.seed, token)

    def tokenized(docs):
        tokens = agree(d, lambda: data_mod.tokenize_training_data(docs, tokenizer, config, eos))
        packed = agree(d, lambda: data_mod.pack(tokens.train, config.seq_len, eos, module.block_size + 2,
                                                tokens.train_masks))
        return tokens, packed

    if not config.regenerate:  # too little data fails here, before the target is loaded
        tokens, (ids, mask) = tokenized(docs)
    sharded = _shard_decision(config, d, device, t_folder, target)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    adapter = load_target(t_folder, device="cpu" if sharded else device, dtype=dtype)
    adapter.model.requires_grad_(False)
    if sharded:
        from dflash_compat.train.distributed import shard_layers

        shard_layers(adapter.layers, device, d)
        adapter.model.to(device)  # the replicated rest: embedding, final norm, head
    if config.regenerate:
        docs = _regenerated(docs, adapter, tokenizer, config, d, out_path, resume, sharded, log)
        tokens, (ids, mask) = tokenized(docs)
    prompts = tokens.eval_prompts(config.eval_prompt_tokens, config.eval_prompts)
    check_pairing(module, adapter)
    session = loop.Session(config, out_path, adapter, module, raw, ids, mask, prompts, stop_tokens_of(adapter), device,
                           dist=d, sharded=sharded)
    session.optimizer = loop.make_optimizer(module, config)
    session.data_summary = dict(tokens.summary, documents=len(docs), train_sequences=int(ids.shape[0]),
                                eval_prompts=len(prompts))
    if resume:
        saved_batch = checkpoint.saved_global_batch(out_path)
        session.start_step, saved, session.history = checkpoint.load_checkpoint(out_path, module, session.optimizer)
        if saved and saved != raw:
            raise InputError(f"--resume: the checkpoint in {out_path} was made for another draft config")
        if session.start_step >= config.steps:
            raise InputError(f"--resume: the checkpoint is at step {session.start_step}; pass --steps above it")
        if saved_batch and saved_batch != session.global_batch and d.main and log is not None:
            log(f"note: the checkpoint was trained with a global batch of {saved_batch}; this run's is "
                f"{session.global_batch} ({config.batch_size} per rank x {d.world} ranks)")
    if d.main:
        make_output_folder(out_path)
    return session


def train(target: str, draft: str, data: str, out: str, config: Optional[TrainConfig] = None, *,
          resume: bool = False, force: bool = False, progress: bool = True, token: Optional[str] = None,
          log: Optional[Callable[[str], None]] = None):
    """Train DRAFT for TARGET on DATA and export it to OUT (z-lab format); -> loop.TrainResult. Under torchrun
    (WORLD_SIZE > 1) every rank calls this: the process group is joined here and always left."""
    from dflash_compat.train.distributed import session as dist_session

    config = config or TrainConfig()
    with dist_session(config.device) as d:
        session = prepare(target, draft, data, out, config, resume=resume, force=force, token=token, dist=d, log=log)
        from dflash_compat.train.loop import run_training  # torch: imported once the inputs and OUT passed their checks

        return run_training(session, progress=progress, log=log)


def __getattr__(name: str):  # TrainResult lives with the loop, which imports torch
    if name == "TrainResult":
        from dflash_compat.train.loop import TrainResult

        return TrainResult
    raise AttributeError(name)
