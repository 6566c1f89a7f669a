"""`dflash-check train`: train a DFlash draft for a target (self-distillation, the published recipe)."""

from __future__ import annotations

import sys

import click

from dflash_compat.inputs import FiniteFloatRange, SeedRange

__all__ = ["train_cmd"]


def _set_threads(session, requested) -> None:
    """On the CPU, the threads `smoke` would pick (runtime/threads.py): a small pair trains several times
    faster on one thread of a busy machine than on torch's default (docs/training.md, "How long it takes")."""
    if session.device.type != "cpu":
        return
    import torch

    from dflash_compat.runtime.threads import choose_threads

    params = sum(p.numel() for p in session.target.model.parameters()) + sum(p.numel() for p in
                                                                             session.draft.parameters())
    choice = choose_threads(params, torch.get_num_threads(), requested=requested)
    if choice.threads is not None:
        torch.set_num_threads(choice.threads)


def _relaunch_args(ctx: click.Context, skip: set[str]) -> list[str]:
    """This command's parsed options back as arguments for the ranks (`--name=value`, so that no value is read
    as an option): everything but `skip`, and never the token (the ranks inherit HF_TOKEN instead)."""
    args: list[str] = []
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if param.name in skip or param.name == "token":
            continue
        if isinstance(param, click.Argument):
            args.append(str(value))
        elif isinstance(param, click.Option) and param.is_flag:
            if value:
                args.append(param.opts[0])
        elif value is not None:
            args.append(f"{param.opts[0]}={value}")
    return args


def _data_spec(data, dataset, dataset_config, dataset_split, streaming, responses):
    from dflash_compat.exceptions import InputError
    from dflash_compat.train.data import DataSpec

    if (data is None) == (dataset is None):
        raise InputError("give the training data with --data PATH or --dataset NAME_OR_PATH (one of them)")
    if streaming and dataset is None:
        raise InputError("--streaming reads a --dataset record by record; --data files are read whole")
    if responses is not None and data is None:
        raise InputError("--responses joins the answers with the prompts file given as --data")
    if dataset is None and (dataset_config is not None or dataset_split != "train"):
        raise InputError("--dataset-config and --dataset-split choose within a --dataset")
    return DataSpec(path=data, dataset=dataset, config=dataset_config, split=dataset_split, streaming=streaming,
                    responses=responses)


def _write_prompts(target, spec, config, path, token) -> None:
    """--write-prompts FILE: the data's prompts as an OpenAI batch input file, nothing trained."""
    from pathlib import Path

    from dflash_compat.emitters._safe import printable
    from dflash_compat.files.safe_write import check_output
    from dflash_compat.resolve.refs import download_weights, resolve
    from dflash_compat.train import _tokenizer
    from dflash_compat.train.data import load_training_data
    from dflash_compat.train.regenerate import prompt_requests, write_prompts

    check_output(Path(path), force=False, option="--write-prompts")
    docs = load_training_data(spec, config)
    folder = Path(download_weights(resolve(target, "target", token=token), token=token))
    requests = prompt_requests(docs, _tokenizer(folder, target), target, config.regenerate_tokens,
                               config.prompt_tokens)
    write_prompts(Path(path), requests)
    click.echo(printable(f"wrote {len(requests)} prompts to {path} (OpenAI batch format: answer them with "
                         "`vllm run-batch`, then train with --data FILE --responses ANSWERS)"))


def _launch(ctx, nproc, device, threads, token, target, draft, spec, out, config, resume, force) -> None:
    """--nproc-per-node N: the checks a rank would make first, here, before torch is imported; then torch's
    elastic launcher starts the ranks (distributed.launch)."""
    import os

    from dflash_compat.emitters._safe import printable
    from dflash_compat.resolve.refs import resolve
    from dflash_compat.train import check_out
    from dflash_compat.train.data import load_training_data
    from dflash_compat.train.distributed import check_nproc, launch

    check_nproc(nproc, device)
    config.validate()
    resolve(target, "target", token=token)
    check_out(out, target, draft, resume, force)
    load_training_data(spec, config)
    if token:
        os.environ["HF_TOKEN"] = token
    try:
        code = launch(nproc, _relaunch_args(ctx, {"nproc_per_node", "framework"}), threads=threads)
    except KeyboardInterrupt:  # Ctrl-C reaches every rank too: rank 0 saves a checkpoint, the agent stops them
        click.echo(printable(f"dflash-check: interrupted; a checkpoint is in {out}/checkpoint: continue with "
                             "--resume"), err=True)
        sys.exit(130)
    if code:
        sys.exit(code)


@click.command("train", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.option("--draft", "-d", required=True, help="The draft to train: a folder from `dflash-check init-draft` "
              "(config only: random start) or a trained draft to continue from.")
@click.option("--data", help="Training data: a .txt/.py/.md file, a folder of them, or JSONL records with a "
              "\"text\", a conversation (\"messages\") or a prompt/response pair.")
@click.option("--dataset", help="Training data through the datasets library: a Hub id, a save_to_disk folder, or a "
              ".json/.jsonl/.parquet/.csv file (records as for --data).")
@click.option("--dataset-config", help="The --dataset's configuration name.")
@click.option("--dataset-split", default="train", show_default=True, help="The --dataset's split.")
@click.option("--streaming", is_flag=True, help="Read the --dataset record by record (with --max-samples).")
@click.option("--max-samples", type=click.IntRange(min=1), help="Read at most this many documents / records.")
@click.option("--output", "-o", "out", type=click.Path(file_okay=False),
              help="Folder for the trained draft (config.json + model.safetensors), training.json, training.png, "
              "tensorboard/ and checkpoints.")
@click.option("--steps", type=click.IntRange(min=1), default=1000, show_default=True, help="Optimizer steps.")
# upper bounds: sizes no machine holds (a batch of 2**63 overflowed torch.randint, a 2**63-token sequence
# ran out of memory, lr 1e300 overflowed AdamW, gamma 1e-320 zeroed every loss weight: all exit 1 before)
@click.option("--batch-size", type=click.IntRange(min=1, max=2**16), default=8, show_default=True,
              help="Sequences per step and rank (the global batch: this x the number of ranks).")
@click.option("--seq-len", type=click.IntRange(min=4, max=2**20), default=512, show_default=True,
              help="Tokens per sequence.")
@click.option("--anchors", type=click.IntRange(min=1), default=256, show_default=True,
              help="Anchor positions (one block each) per sequence and step.")
@click.option("--lr", type=FiniteFloatRange(min=0, min_open=True, max=10), default=6e-4, show_default=True,
              help="Peak learning rate (AdamW, cosine decay).")
@click.option("--warmup", type=click.IntRange(min=0), default=50, show_default=True, help="Warmup steps.")
@click.option("--gamma", type=FiniteFloatRange(min=0.01, max=1e6),
              help="Loss weight decay exp(-(k-1)/gamma) over block positions (default: 4 for block 8, 7 for block 16).")
@click.option("--labels", type=click.Choice(("target", "data")), default="target", show_default=True,
              help="target: the target's own greedy predictions (self-distillation); data: the data's next tokens.")
@click.option("--regenerate", is_flag=True, help="First answer the data's prompts with the target (built-in "
              "runtime, greedy) and train on its answers (OUT/regenerated.jsonl).")
@click.option("--regenerate-tokens", type=click.IntRange(min=1, max=2**16), default=128, show_default=True,
              help="The most tokens of one regenerated answer.")
@click.option("--write-prompts", type=click.Path(dir_okay=False),
              help="Write the data's prompts as an OpenAI batch file (for `vllm run-batch`) and stop.")
@click.option("--responses", type=click.Path(dir_okay=False),
              help="Answers to the --data prompts file (vLLM run-batch output): train on prompt + answer.")
@click.option("--eval-every", type=click.IntRange(min=0), default=200, show_default=True,
              help="Steps between held-out tau measurements with the runtime (0: at the end only).")
@click.option("--checkpoint-every", type=click.IntRange(min=0), default=200, show_default=True,
              help="Steps between checkpoints in OUT/checkpoint (0: at the end only).")
@click.option("--resume", is_flag=True, help="Continue from OUT/checkpoint (same batches as an uninterrupted run, on "
              "any number of ranks).")
@click.option("--force", is_flag=True, help="Train into a folder that is not empty, from scratch.")
@click.option("--seed", type=SeedRange(), default=0, show_default=True,
              help="Seed of the batches, anchors and a random start (-2**63 to 2**64-1, as torch takes).")
@click.option("--device", type=click.Choice(("auto", "cpu", "cuda")), default="auto", show_default=True,
              help="auto picks cuda (bf16 autocast) when available.")
@click.option("--nproc-per-node", type=int,
              help="Train on N ranks of this machine (torch.distributed.run; gloo on the CPU, nccl on GPUs). Under "
              "torchrun, leave it out.")
@click.option("--shard-target", type=click.Choice(("auto", "never", "always")), default="auto", show_default=True,
              help="Shard the target's decoder layers over the ranks (FSDP2); auto: when it takes over half a GPU.")
@click.option("--framework", type=click.Choice(("torch", "mlx")), default="torch", show_default=True,
              help="mlx: train with MLX (Apple Silicon; mlx[cpu] on Linux), same recipe and export.")
@click.option("--export-dtype", type=click.Choice(("bfloat16", "float32", "float16")), default="bfloat16",
              show_default=True, help="dtype of the exported model.safetensors.")
@click.option("--threads", type=click.IntRange(min=1),
              help="CPU: torch intra-op threads (default: one per 50M parameters, at most the free cores; "
              "OMP_NUM_THREADS wins).")
@click.option("--token", envvar="HF_TOKEN", help="Hugging Face token for private or gated repos.")
@click.pass_context
def train_cmd(ctx, target, draft, data, dataset, dataset_config, dataset_split, streaming, max_samples, out, steps,
              batch_size, seq_len, anchors, lr, warmup, gamma, labels, regenerate, regenerate_tokens, write_prompts,
              responses, eval_every, checkpoint_every, resume, force, seed, device, nproc_per_node, shard_target,
              framework, export_dtype, threads, token) -> None:
    """Train the DFlash draft DRAFT for TARGET on DATA, and export it to OUT in the z-lab format
    that vLLM, SGLang, the dflash package and `dflash-check smoke` load.

    The target is frozen; for random anchors in each sequence the draft sees the target's features
    before the anchor and predicts the target's next block-1 tokens in one pass; the loss is a
    cross-entropy weighted exp(-(k-1)/gamma) by block position. Several ranks: --nproc-per-node N,
    or torchrun. Recipe, commands and figures: docs/training.md.

    \b
    Exit codes: 0 trained; 2 bad input or out of memory (one line says what
    to lower); 130 interrupted (a checkpoint is saved: continue with --resume).
    """
    from dflash_compat.exceptions import InputError
    from dflash_compat.train.config import TrainConfig

    spec = _data_spec(data, dataset, dataset_config, dataset_split, streaming, responses)
    config = TrainConfig(steps=steps, batch_size=batch_size, seq_len=seq_len, anchors=anchors, lr=lr, warmup=warmup,
                         gamma=gamma, labels=labels, eval_every=eval_every, checkpoint_every=checkpoint_every,
                         seed=seed, device=device, export_dtype=export_dtype, max_documents=max_samples,
                         regenerate=regenerate, regenerate_tokens=regenerate_tokens, shard_target=shard_target)
    config.validate()
    if write_prompts is not None:
        _write_prompts(target, spec, config, write_prompts, token)
        return
    if out is None:
        raise InputError("-o/--output: give the folder for the trained draft")
    from dflash_compat.train.distributed import from_env

    if shard_target == "always" and nproc_per_node is None and not from_env().active:
        raise InputError("--shard-target always: sharding needs 2 or more ranks (--nproc-per-node or torchrun)")
    if framework == "mlx":
        if nproc_per_node is not None or shard_target == "always" or regenerate:
            raise InputError("--framework mlx trains in one process, without --nproc-per-node, --shard-target or "
                             "--regenerate (answer the prompts first: --write-prompts / --regenerate with torch)")
        return _run_mlx(target, draft, spec, out, config, resume, force, token)
    if nproc_per_node is not None:
        return _launch(ctx, nproc_per_node, device, threads, token, target, draft, spec, out, config, resume, force)
    _run_torch(target, draft, spec, out, config, resume, force, token, threads)


def _run_torch(target, draft, spec, out, config, resume, force, token, threads) -> None:
    from dflash_compat.emitters._safe import printable
    from dflash_compat.exceptions import DFlashCompatError
    from dflash_compat.train import prepare
    from dflash_compat.train.distributed import from_env, session

    d = from_env()
    log = (lambda line: click.echo(printable(line), err=True)) if d.main else (lambda line: None)
    try:
        with session(config.device) as d:
            try:
                s = prepare(target, draft, spec, out, config, resume=resume, force=force, token=token, dist=d, log=log)
                from dflash_compat.train.loop import (
                    run_training,  # torch: imported once the inputs and OUT passed their checks
                )

                _set_threads(s, threads)
                result = run_training(s, log=log)
            except DFlashCompatError as exc:
                if d.main or getattr(exc, "quiet", False):
                    raise
                prefixed = type(exc)(f"rank {d.rank}: {exc}")  # a rank's own error, told apart from rank 0's
                prefixed.exit_code = exc.exit_code
                raise prefixed from None
    except KeyboardInterrupt:
        if d.main:
            click.echo(printable(f"dflash-check: interrupted; a checkpoint is in {out}/checkpoint: continue with "
                                 "--resume"), err=True)
        sys.exit(130)
    except DFlashCompatError as exc:
        if getattr(exc, "quiet", False):
            sys.exit(exc.exit_code)  # rank 0 said it
        raise
    if not d.main:
        return
    _report(result)


def _report(result) -> None:
    from dflash_compat.emitters._safe import printable

    tau = "-" if result.tau is None else f"{result.tau:.2f}"
    lines = [f"trained {result.steps} steps in {result.seconds:.0f} s: loss {result.loss:.3f}, held-out tau {tau}",
             f"wrote {result.out / 'config.json'} and {result.out / 'model.safetensors'} (z-lab format); "
             f"history in {result.out / 'training.json'}"]
    click.echo("\n".join(printable(line) for line in lines))


def _run_mlx(target, draft, spec, out, config, resume, force, token) -> None:
    from dflash_compat.emitters._safe import printable
    from dflash_compat.train.mlx_loop import prepare_mlx, run_training_mlx

    log = lambda line: click.echo(printable(line), err=True)  # noqa: E731
    try:
        session = prepare_mlx(target, draft, spec, out, config, resume=resume, force=force, token=token, log=log)
        result = run_training_mlx(session, log=log)
    except KeyboardInterrupt:
        click.echo(printable(f"dflash-check: interrupted; a checkpoint is in {out}/checkpoint: continue with "
                             "--resume"), err=True)
        sys.exit(130)
    _report(result)
