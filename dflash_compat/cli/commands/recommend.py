"""`dflash-check recommend`: the modelled speed-up for each K from an acceptance profile, the best K, its flags."""

from __future__ import annotations

from typing import Any, Optional

import click

from dflash_compat.inputs import FiniteFloatRange

__all__ = ["recommend_cmd", "recommend_doc", "engine_flags"]



def engine_flags(k: int, draft: str) -> dict[str, str]:
    """The launch flags that run K draft tokens per step (block K+1) on each engine (names as in
    serving/launch.py, which cites each engine's parser)."""
    from dflash_compat.emitters._safe import shell_quote
    from dflash_compat.serve.plan import speculative_config_args

    spec = speculative_config_args({"method": "dflash", "model": draft, "num_speculative_tokens": k})
    return {
        "vllm": " ".join(shell_quote(a) for a in spec),
        "sglang": f"--speculative-num-draft-tokens {k + 1}",
        "dflash (mlx, transformers)": f"--block-size {k + 1}",
        "llama.cpp": f"--spec-type draft-dflash --spec-draft-n-max {k}",
    }


def recommend_doc(profile: dict[str, Any], cost: Optional[dict[str, float]], draft: str) -> dict[str, Any]:
    """Everything `recommend` prints, as data: the profile, the cost model used, the table, the choice."""
    from dflash_compat.liveprobe.profile import DEFAULT_COST, recommend_k, speedup_table

    assumed = cost is None
    origin = "given" if cost is not None else None
    if cost is None and profile.get("cost"):
        cost, assumed, origin = profile["cost"], False, f"measured by {profile.get('source')}"
    cost = dict(cost or DEFAULT_COST)
    per = profile["per_position_acceptance"]
    k = recommend_k(per, cost)
    table = speedup_table(per, cost)
    notes = []
    if 0 < k < len(per):
        notes.append(f"K = {k} is below the draft's block_size - 1 = {len(per)}: vLLM verifies only K of the "
                     f"drafted tokens; SGLang warns that {k + 1} draft tokens differ from the trained block")
    if k == 0:
        notes.append("no K pays for its draft pass under this cost model: serve without speculation")
    return {
        "profile": profile,
        "cost": {"draft": cost["draft"], "verify_per_token": cost["verify_per_token"], "assumed": assumed,
                 "origin": origin or "assumed"},
        "table": table,
        "recommended_k": k,
        "modelled_speedup": table[k]["speedup"],
        "flags": engine_flags(k, draft) if k > 0 else {},
        "notes": notes,
    }


@click.command("recommend", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profile", "profile_path", required=True, type=click.Path(dir_okay=False),
              help="An acceptance profile written by `smoke --profile-out` or `probe --profile-out`.")
@click.option("--draft-cost", type=FiniteFloatRange(min=0),
              help="Cost of one draft pass, as a fraction of one plain target decoding step (default: the "
              "profile's measured cost, else 0.1).")
@click.option("--verify-cost-per-token", type=FiniteFloatRange(min=0),
              help="Extra cost of each additional token verified in one target pass, as a fraction of one plain "
              "step (default: measured, else 0: a memory-bound GPU verifies a block for the price of a token).")
@click.option("--draft", "draft_name", default="DRAFT", show_default=True,
              help="The draft's name for the printed vLLM flag.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="Also draw the profile and the model to this PNG (needs matplotlib; never through a symlink; an "
              "existing file only if it is a previous plot).")
@click.option("--force", is_flag=True, help="Let --plot replace a file or symlink that is not a previous plot.")
@click.option("--format", "-f", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="text: histogram, table and flags; json: the same as data.")
def recommend_cmd(profile_path, draft_cost, verify_cost_per_token, draft_name, plot_path, force, fmt) -> None:
    """Estimate the speed-up of each K (draft tokens per step) from an acceptance profile and a cost
    model, recommend the best K and print the engine flags that launch it.

    \b
    Model (docs/serving.md):
      E(K) = 1 + p_1 + ... + p_K      tokens per step
      c(K) = draft + verify(K+1)      cost per step
      S(K) = E(K) x plain step / c(K) modelled speed-up
    Exit codes: 0 done; 2 bad input.
    """
    from dflash_compat.liveprobe.profile import DEFAULT_COST, read_profile

    profile = read_profile(profile_path)
    cost = None
    if draft_cost is not None or verify_cost_per_token is not None:
        base = profile.get("cost") or DEFAULT_COST
        verify = base["verify_per_token"] if verify_cost_per_token is None else verify_cost_per_token
        cost = {"draft": base["draft"] if draft_cost is None else draft_cost, "verify_per_token": verify}
    doc = recommend_doc(profile, cost, draft_name)
    if plot_path:
        from dflash_compat.files.safe_write import model_folders
        from dflash_compat.liveprobe.render import plot_profile

        plot_profile(doc, plot_path, force=force, protected=model_folders())
    if fmt == "json":
        from dflash_compat.emitters._safe import dumps

        click.echo(dumps(doc), nl=False)
    else:
        from dflash_compat.liveprobe.render import render_recommend
        from dflash_compat.terminal import make_console

        render_recommend(doc, make_console())
    if plot_path and fmt == "text":
        click.echo(f"plot written to {plot_path}")
