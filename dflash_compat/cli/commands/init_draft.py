"""`dflash-check init-draft`: write a DFlash draft config (and optional weights) derived from a target."""

from __future__ import annotations

import sys

import click

from dflash_compat.inputs import SeedRange

__all__ = ["init_draft_cmd"]


def _parse_ids(value: str | None) -> list[int] | None:
    if value is None:
        return None
    from dflash_compat.inputs import parse_int_list

    # ASCII digits only: int() would read Arabic-Indic '\u0661,\u0662' as [1, 2]
    return parse_int_list(value.replace(" ", ""), "--layer-ids", allow_negative=True)


@click.command("init-draft", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.option("--output", "-o", "out", required=True, type=click.Path(file_okay=False),
              help="Folder to write the draft to (config.json, and model.safetensors with --weights).")
@click.option("--layers", type=click.IntRange(min=1, max=64), default=5, show_default=True,
              help="Number of draft decoder layers (published drafts for 8B targets have 5).")
@click.option("--block-size", type=click.IntRange(min=2, max=64), default=16, show_default=True,
              help="Tokens per block, the anchor included (the draft proposes block_size - 1).")
@click.option("--layer-ids",
              help="Target layers whose outputs condition the draft, e.g. 1,9,17 (default: the reference formula).")
@click.option("--mask-token-id", type=click.IntRange(min=0),
              help="Token id of the mask (default: the safest the tokenizer offers).")
@click.option("--version", type=click.Choice(("v1", "v2")), default="v1", show_default=True,
              help="v1: DFlashDraftModel (every engine); v2: DFlash2DraftModel (dynamic convolutions, selector).")
@click.option("--weights", type=click.Choice(("none", "random", "from-target")), default="none", show_default=True,
              help="none: config only; random: seeded random weights; from-target: draft layers copied from the "
              "target's layers at the layer ids where shapes allow.")
@click.option("--seed", type=SeedRange(), default=0, show_default=True,
              help="Seed of the random weights (-2**63 to 2**64-1, as torch takes).")
@click.option("--dtype", type=click.Choice(("bfloat16", "float32", "float16")), default="bfloat16", show_default=True,
              help="dtype of the written weights (and the config's torch_dtype).")
@click.option("--force", is_flag=True, help="Overwrite config.json / model.safetensors in a folder that is not empty.")
@click.option("--token", envvar="HF_TOKEN", help="Hugging Face token for private or gated repos.")
def init_draft_cmd(target, out, layers, block_size, layer_ids, mask_token_id, version, weights, seed, dtype, force,
                   token) -> None:
    """Write a z-lab DFlash draft for TARGET into a new folder: hidden size, heads, vocabulary, RoPE,
    norm epsilon and Gemma-style scalings from the target's (text) config, layer ids by the
    reference formula, and a mask token that real text never uses. Then run the config checks on
    the pair. TARGET is a local folder or a Hub repo id; its folder is never written to.

    \b
    Exit codes: 0 written; 2 bad input (nothing written).
    """
    from dflash_compat.init_draft import InitOptions, init_draft
    from dflash_compat.init_draft.verify import check_pair

    # a DFlashCompatError is rendered by the CLI group (dflash_compat/cli/errors.py): one escaped line, exit 2
    options = InitOptions(layers=layers, block_size=block_size, layer_ids=_parse_ids(layer_ids),
                          mask_token_id=mask_token_id, version=2 if version == "v2" else 1, weights=weights,
                          seed=seed, dtype=dtype, force=force, token=token)
    result = init_draft(target, out, options)
    report = check_pair(target, out, token=token)
    from dflash_compat.emitters._safe import printable

    cfg = result.config
    dflash = cfg["dflash_config"]
    lines = [f"wrote {result.folder / 'config.json'}: {cfg['architectures'][0]}, {cfg['num_hidden_layers']} "
             f"layer(s), block {dflash['block_size']}, target layers {dflash['target_layer_ids']}",
             f"mask token {result.mask.token_id}: {result.mask.reason}"]
    if result.weights != "none":
        extra = f", {result.copied_tensors} tensors from the target" if result.weights == "from-target" else ""
        lines.append(f"wrote {result.folder / 'model.safetensors'}: {result.weights} weights (seed {seed}{extra})")
    lines += [f"note: {note}" for note in result.notes]
    verdict = ", ".join(f"{b} {v}" for b, v in report.summary.verdict.items())
    lines.append(f"config check: {verdict} (run `dflash-check {target} --draft {out}` for the findings)")
    # what came from the target (a token's text, paths) reaches the terminal escaped
    from dflash_compat.terminal import wrap_block

    click.echo(wrap_block([printable(line) for line in lines], sys.stdout))
