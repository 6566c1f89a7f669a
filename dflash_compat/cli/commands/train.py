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


@click.command("train", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.option("--draft", "-d", required=True, help="The draft to train: a folder from `dflash-check init-draft` "
              "(config only: random start) or a trained draft to continue from.")
@click.option("--data", required=True, type=click.Path(exists=True),
              help="Training text: a .txt/.py/.md file, a folder of them, or JSONL with a \"text\" field.")
@click.option("--output", "-o", "out", required=True, type=click.Path(file_okay=False),
              help="Folder for the trained draft (config.json + model.safetensors), training.json and checkpoints.")
@click.option("--steps", type=click.IntRange(min=1), default=1000, show_default=True, help="Optimizer steps.")
# upper bounds: sizes no machine holds (a batch of 2**63 overflowed torch.randint, a 2**63-token sequence
# ran out of memory, lr 1e300 overflowed AdamW, gamma 1e-320 zeroed every loss weight: all exit 1 before)
@click.option("--batch-size", type=click.IntRange(min=1, max=2**16), default=8, show_default=True,
              help="Sequences per step.")
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
@click.option("--eval-every", type=click.IntRange(min=0), default=200, show_default=True,
              help="Steps between held-out tau measurements with the runtime (0: at the end only).")
@click.option("--checkpoint-every", type=click.IntRange(min=0), default=200, show_default=True,
              help="Steps between checkpoints in OUT/checkpoint (0: at the end only).")
@click.option("--resume", is_flag=True, help="Continue from OUT/checkpoint (same batches as an uninterrupted run).")
@click.option("--force", is_flag=True, help="Train into a folder that is not empty, from scratch.")
@click.option("--seed", type=SeedRange(), default=0, show_default=True,
              help="Seed of the batches, anchors and a random start (-2**63 to 2**64-1, as torch takes).")
@click.option("--device", type=click.Choice(("auto", "cpu", "cuda")), default="auto", show_default=True,
              help="auto picks cuda (bf16 autocast) when available.")
@click.option("--export-dtype", type=click.Choice(("bfloat16", "float32", "float16")), default="bfloat16",
              show_default=True, help="dtype of the exported model.safetensors.")
@click.option("--threads", type=click.IntRange(min=1),
              help="CPU: torch intra-op threads (default: one per 50M parameters, at most the free cores; "
              "OMP_NUM_THREADS wins).")
@click.option("--token", envvar="HF_TOKEN", help="Hugging Face token for private or gated repos.")
def train_cmd(target, draft, data, out, steps, batch_size, seq_len, anchors, lr, warmup, gamma, labels, eval_every,
              checkpoint_every, resume, force, seed, device, export_dtype, threads, token) -> None:
    """Train the DFlash draft DRAFT for TARGET on DATA, and export it to OUT in the z-lab format
    that vLLM, SGLang, the dflash package and `dflash-check smoke` load.

    The target is frozen; for random anchors in each sequence the draft sees the target's features
    before the anchor and predicts the target's next block-1 tokens in one pass; the loss is a
    cross-entropy weighted exp(-(k-1)/gamma) by block position. Recipe and figures: docs/training.md.

    \b
    Exit codes: 0 trained; 2 bad input or out of memory (one line says what
    to lower); 130 interrupted (a checkpoint is saved: continue with --resume).
    """
    from dflash_compat.emitters._safe import printable
    from dflash_compat.train import TrainConfig, prepare

    config = TrainConfig(steps=steps, batch_size=batch_size, seq_len=seq_len, anchors=anchors, lr=lr, warmup=warmup,
                         gamma=gamma, labels=labels, eval_every=eval_every, checkpoint_every=checkpoint_every,
                         seed=seed, device=device, export_dtype=export_dtype)
    try:
        session = prepare(target, draft, data, out, config, resume=resume, force=force, token=token)
        from dflash_compat.train.loop import run_training  # torch: imported once the inputs and OUT passed their checks

        _set_threads(session, threads)
        result = run_training(session, log=lambda line: click.echo(line, err=True))
    # a DFlashCompatError is rendered by the CLI group (dflash_compat/cli/errors.py): one escaped line, exit 2
    except KeyboardInterrupt:
        click.echo(printable(f"dflash-check: interrupted; a checkpoint is in {out}/checkpoint: continue with "
                             "--resume"), err=True)
        sys.exit(130)
    tau = "-" if result.tau is None else f"{result.tau:.2f}"
    lines = [f"trained {result.steps} steps in {result.seconds:.0f} s: loss {result.loss:.3f}, held-out tau {tau}",
             f"wrote {result.out / 'config.json'} and {result.out / 'model.safetensors'} (z-lab format); "
             f"history in {result.out / 'training.json'}"]
    click.echo("\n".join(printable(line) for line in lines))
