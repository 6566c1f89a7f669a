"""`dflash-check serve`: the launch command for a pair on one engine, checked by the rules before it is printed."""

from __future__ import annotations

import dataclasses
import sys

import click

from dflash_compat.cli.commands.check_options import engine_version_option, pair_options
from dflash_compat.emitters import counts as summary_counts
from dflash_compat.emitters._safe import dumps, printable
from dflash_compat.exceptions import EXIT_FAIL, EXIT_OK
from dflash_compat.terminal import terminal_width, wrap

__all__ = ["serve_cmd", "serve_payload", "render_serve_text"]



def serve_payload(plan, report, errors) -> dict:
    """The JSON document: the command as argv (never a shell string), its environment, the findings."""
    doc = {
        "engine": plan.engine,
        "servable": not errors,
        "argv": list(plan.argv) if not errors else [],
        "env": dict(plan.env),
        "block_size": plan.block_size,
        "notes": list(plan.notes),
        "findings": [dataclasses.asdict(f) for f in report.findings],
    }
    if plan.engine == "llama.cpp":  # the conversion commands to run before the server (each an argv)
        doc["prepare"] = [list(a) for a in plan.prepare] if not errors else []
    return doc


def _comment(text: str, width: int) -> list[str]:
    """`#` lines at most `width` wide (words whole); control characters from a config shown as escapes, so
    that no value can end the comment and start a command."""
    return ["#" + line[1:] for line in wrap(printable(text), width, indent=4, first=2)]


def render_serve_text(plan, report, errors, width: int = 80) -> str:
    """A shell script: `#` comment lines (verdict, notes, findings) and, when servable, the command.
    Never coloured (it is meant for `> launch.sh`); comments wrapped to `width`."""
    from dflash_compat.serve.plan import shell_command

    s = report.summary
    counts = summary_counts(s.errors, s.warnings, s.infos)
    lines = []
    if errors:
        lines += _comment(f"dflash-check serve: this pair cannot be served on {plan.engine} ({counts}):", width)
    else:
        lines += _comment(f"dflash-check serve: {plan.engine} launch command, checked by the rules ({counts})", width)
    for f in report.findings:
        lines += _comment(f"{f.code} {f.severity} [{f.backend}]: {f.message}", width)
        if f.severity != "info":
            lines += _comment(f"  fix: {f.fix}", width)
    if errors:
        return "\n".join(lines) + "\n"
    lines += [_c for note in plan.notes for _c in _comment(note, width)]
    prepare = [shell_command(plan, width, argv) for argv in plan.prepare]
    return "\n".join(lines + prepare + [shell_command(plan)]) + "\n"


def _profile(path):
    if path is None:
        return None
    from dflash_compat.liveprobe.profile import read_profile

    return read_profile(path)


@click.command("serve", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.option("--draft", "-d", required=True, help="The DFlash draft: a local folder or a Hub repo id.")
@click.option("--engine", "-e", required=True,
              type=click.Choice(("vllm", "sglang", "mlx", "transformers", "llama.cpp")),
              help="The engine to launch: vLLM, SGLang, llama.cpp (llama-server; a checkpoint pair is converted to "
              "GGUF first), or the dflash package's MLX / transformers entry point.")
@click.option("--num-speculative-tokens", type=click.IntRange(min=1),
              help="vLLM num_speculative_tokens K (default: the draft's block_size - 1).")
@click.option("--num-draft-tokens", type=click.IntRange(min=1),
              help="SGLang --speculative-num-draft-tokens (default: the draft's block_size, anchor included).")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tensor-parallel size of the target.")
@click.option("--draft-tp", type=click.IntRange(min=1),
              help="vLLM: tensor-parallel size of the draft (1 or the target's).")
@click.option("--max-num-seqs", type=click.IntRange(min=1),
              help="Concurrent sequences: vLLM --max-num-seqs (default 256, or budget // (K+1)); SGLang "
              "--max-running-requests.")
@click.option("--max-num-batched-tokens", type=click.IntRange(min=1),
              help="vLLM token budget per step (default: max-num-seqs x (K+1), at least 2048).")
@click.option("--attn-dp-size", type=click.IntRange(min=1),
              help="SGLang attention data-parallel size (--attn-dp-size).")
@click.option("--enable-dp-lm-head", is_flag=True,
              help="SGLang --enable-dp-lm-head (required by DFLASH with attention DP).")
@click.option("--pp-size", type=click.IntRange(min=1), help="SGLang pipeline-parallel size (DFLASH needs 1).")
@click.option("--dflash-block-size", type=click.IntRange(min=1),
              help="SGLang --speculative-dflash-block-size (must equal the draft-token count).")
@click.option("--draft-window-size", type=click.IntRange(min=1),
              help="SGLang --speculative-draft-window-size (at least the block).")
@click.option("--quantization",
              help="SGLang --quantization of the target (the draft follows it unless --draft-quantization says "
                   "otherwise).")
@click.option("--draft-quantization", help="SGLang --speculative-draft-model-quantization (e.g. unquant).")
@click.option("--served-model-name", help="The model name the server answers to (vLLM / SGLang).")
@click.option("--port", type=click.IntRange(min=1, max=65535),
              help="The server's port (vLLM default 8000, SGLang 30000).")
@click.option("--spec-draft-n-max", type=click.IntRange(min=1),
              help="llama.cpp --spec-draft-n-max (default: from --profile, else the draft's block_size - 1).")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False),
              help="llama.cpp: an acceptance profile (smoke/probe --profile-out); the draft length is its best K.")
@click.option("--prompt", default=None, help="MLX / transformers: the prompt the dflash command generates from.")
@pair_options(trust_help="Allow the target repo's own Python code (checks and the launched engine).")
@click.option("--format", "-f", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="text: a shell script (comments + the command); json: engine, argv, env, findings.")
@engine_version_option()
def serve_cmd(target, draft, engine, num_speculative_tokens, num_draft_tokens, tp, draft_tp, max_num_seqs,
              max_num_batched_tokens, attn_dp_size, enable_dp_lm_head, pp_size, dflash_block_size, draft_window_size,
              quantization, draft_quantization, served_model_name, port, spec_draft_n_max, profile_path, prompt,
              revision, draft_revision, token, no_deep, trust_remote_code, framework, fmt, engine_versions) -> None:
    """Print the command that serves TARGET with DRAFT on one engine, with every value derived from
    the draft (K = block_size - 1 for vLLM, block_size draft tokens for SGLang, the token budget, TP).
    The command's options are read back and checked by the same rules as `dflash-check`; a pairing
    the engine cannot serve prints the findings instead.

    Exit codes: 0 servable (warnings allowed); 1 the engine cannot serve this pair; 2 bad input.
    """
    from dflash_compat.engines.registry import select_versions
    from dflash_compat.inputs import check_name
    from dflash_compat.serve import pipeline
    from dflash_compat.serve.plan import (
        DEFAULT_PROMPT,
        OPTION_FLAGS,
        LaunchRequest,
        build_plan,
        for_release,
        options_from_argv,
    )

    versions = select_versions(option=engine_versions)

    if served_model_name is not None:  # a name the server answers to: no control or bidi characters in it
        check_name(served_model_name, "--served-model-name")

    req = LaunchRequest(
        engine=engine, target=target, draft=draft, revision=revision, draft_revision=draft_revision,
        num_speculative_tokens=num_speculative_tokens, num_draft_tokens=num_draft_tokens, tp=tp, draft_tp=draft_tp,
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, attn_dp_size=attn_dp_size,
        enable_dp_lm_head=enable_dp_lm_head, pp_size=pp_size, dflash_block_size=dflash_block_size,
        draft_window_size=draft_window_size, quantization=quantization, draft_quantization=draft_quantization,
        served_model_name=served_model_name, port=port,
        trust_remote_code=trust_remote_code, prompt=prompt or DEFAULT_PROMPT, spec_draft_n_max=spec_draft_n_max,
        profile=_profile(profile_path),
    )
    pair = pipeline.PairRef(target=target, draft=draft, revision=revision, draft_revision=draft_revision, token=token,
                            framework=framework, deep=not no_deep, trust_remote_code=trust_remote_code)
    if prompt is not None and engine not in ("mlx", "transformers"):
        from dflash_compat.exceptions import InputError

        raise InputError(f"--prompt: not an option of `serve --engine {engine}`")
    plan = build_plan(req, pipeline.draft_facts(pair))
    # the printed command, read back by the parser a launch file's line is read with: one deployment
    options = pipeline.make_options({**options_from_argv(engine, plan.argv), "engine": engine, "complete": True},
                                    pair, OPTION_FLAGS)
    plan = for_release(plan, _accepted_flags(engine, versions), versions.used(engine) if engine in versions else "")
    report = pipeline.check_for_engine(pair, engine, options, versions)
    errors = pipeline.blocking_findings(report)
    if fmt == "json":
        click.echo(dumps(serve_payload(plan, report, errors)), nl=False)
    else:
        click.echo(render_serve_text(plan, report, errors, terminal_width(sys.stdout)), nl=False)
    sys.exit(EXIT_FAIL if errors else EXIT_OK)


def _accepted_flags(engine: str, versions) -> "frozenset[str] | None":
    """The launch flags the selected release of the engine accepts, where the facts hold them: SGLang's from
    its engine facts; vLLM's (and its --speculative-config keys, which serve prints in the dotted form) from
    the flags read out of its argument parser (data/launch_flags.json, the same facts `launch` judges by)."""
    from dflash_compat.engines.store import UnknownFact, release

    if engine == "sglang":
        try:
            flags = release("sglang", versions.used("sglang")).get("cli_flags")
        except UnknownFact:  # not read at that release (refresh printed why): printed as is, as for vLLM's
            return None
        return frozenset(flags) if flags else None
    if engine == "vllm":
        facts = release("vllm", versions.used("vllm")).flags
        if not facts:
            return None  # a release whose parser was not read: printed as is
        keys = facts.get("speculative_config_keys") or ()
        return frozenset(facts["flags"]) | {f"--speculative-config.{k}" for k in keys}
    return None
