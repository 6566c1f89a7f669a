"""`check`'s command-line options and the CheckRequest they build; `pair_options`, the options every
command that checks a pair shares (check, serve). Declared here, applied in `cli`: a settings file's
keys are derived from the command these options are attached to (`config_file`)."""

from __future__ import annotations

from typing import Any, Callable, Optional

import click

__all__ = ["BACKEND_CHOICES", "FORMAT_CHOICES", "pair_options", "check_options", "build_request"]

BACKEND_CHOICES = ("transformers", "dflash", "vllm", "sglang", "mlx", "llama.cpp")
FORMAT_CHOICES = ("text", "json", "sarif", "junit", "github", "markdown")


def _apply(options: list[Callable]) -> Callable:
    """One decorator applying `options` so that `--help` lists them in this order."""
    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def pair_options(trust_help: str) -> Callable:
    """The options that say where TARGET and DRAFT come from and how deeply they are inspected: one
    definition for every command that checks a pair (check, serve)."""
    return _apply([
        click.option("--revision", help="Hub revision of TARGET (also TARGET@revision)."),
        click.option("--draft-revision", help="Hub revision of DRAFT (also DRAFT@revision)."),
        click.option("--token", envvar="HF_TOKEN",
                     help="Hugging Face token for private or gated repos (default: HF_TOKEN or the saved login)."),
        click.option("--no-deep", is_flag=True,
                     help="Check configs only: do not build the module tree or read weight headers."),
        click.option("--trust-remote-code", is_flag=True, help=trust_help),
        click.option("--framework", type=click.Choice(("auto", "torch", "mlx")), default="auto", show_default=True,
                     help="How to inspect the target's modules: transformers (torch) or mlx-lm; auto-detected."),
    ])


# vLLM and SGLang launch options the rules read (CheckOptions), in the order `check --help` lists them
_ENGINE_OPTIONS = [
    click.option("--num-speculative-tokens", type=click.IntRange(min=1),
                 help="vLLM num_speculative_tokens you will launch with (vLLM has no default; z-lab uses "
                 "block_size - 1)."),
    click.option("--num-draft-tokens", type=click.IntRange(min=1),
                 help="SGLang --speculative-num-draft-tokens you will launch with (should equal block_size)."),
    click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True,
                 help="Tensor-parallel size of the target."),
    click.option("--draft-tp", type=click.IntRange(min=1),
                 help="Tensor-parallel size of the draft (vLLM: 1 or the target's)."),
    click.option("--max-num-seqs", type=click.IntRange(min=1), help="vLLM --max-num-seqs, to check the token budget."),
    click.option("--max-num-batched-tokens", type=click.IntRange(min=1),
                 help="vLLM --max-num-batched-tokens, to check the token budget."),
    click.option("--dflash-block-size", type=click.IntRange(min=1),
                 help="SGLang --speculative-dflash-block-size you will launch with (must equal --num-draft-tokens)."),
    click.option("--draft-window-size", type=click.IntRange(min=1),
                 help="SGLang --speculative-draft-window-size you will launch with (at least the block size)."),
    click.option("--attn-dp-size", type=click.IntRange(min=1),
                 help="SGLang --attn-dp-size you will launch with (--dp-size N --enable-dp-attention means N)."),
    click.option("--draft-attention-backend", metavar="BACKEND",
                 help="SGLang --speculative-draft-attention-backend you will launch with."),
    click.option("--attn-cp-size", type=click.IntRange(min=1),
                 help="SGLang --attn-cp-size you will launch with (DFLASH with attention data parallelism needs 1)."),
    click.option("--enable-dp-lm-head", is_flag=True,
                 help="SGLang --enable-dp-lm-head, which DFLASH needs with attention data parallelism."),
    click.option("--pp-size", type=click.IntRange(min=1), default=1, show_default=True,
                 help="Pipeline-parallel size you will launch with (SGLang DFLASH needs 1)."),
    click.option("--quantization", "quantization", metavar="METHOD",
                 help="SGLang --quantization you will launch with (the draft follows it unless --draft-quantization "
                 "is given)."),
    click.option("--spec-draft-n-max", type=click.IntRange(min=0),
                 help="llama.cpp --spec-draft-n-max you will launch with (llama.cpp clamps it to block_size - 1)."),
    click.option("--draft-quantization", metavar="METHOD",
                 help="SGLang --speculative-draft-model-quantization you will launch with (unquant keeps the draft "
                 "unquantised)."),
]


def check_options(command: Callable) -> Callable:
    """Every option of `check` (the settings file's keys are their long names)."""
    return _apply([
        click.argument("target"),
        click.option("--draft", "-d", required=True, help="The DFlash draft: a local folder or a Hub repo id."),
        click.option("--backend", "-b", "backends", multiple=True, type=click.Choice(BACKEND_CHOICES),
                     help="Check only this serving backend; repeat for several. Default: all of them."),
        click.option("--select", multiple=True,
                     help="Run only rules whose code matches this code or prefix (e.g. DF1, DF303)."),
        click.option("--ignore", multiple=True, help="Skip rules whose code matches this code or prefix."),
        click.option("--severity", "severity", multiple=True, metavar="CODE=LEVEL",
                     help="Report a rule (a code or prefix) at this level: error, warning, info, or ignore to leave "
                     "it out; repeat for several (e.g. --severity DF113=error)."),
        click.option("--strict", is_flag=True, help="Treat warnings as failures for the exit code."),
        click.option("--format", "-f", "fmt", type=click.Choice(FORMAT_CHOICES), default="text", show_default=True,
                     help="Output format; json, sarif and junit are for CI; markdown for a job summary "
                     "or a pull-request comment."),
        click.option("--output", "-o", type=click.Path(dir_okay=False),
                     help="Write the report to this file instead of stdout (never through a symlink, never into a "
                     "model folder; an existing file only if it is a previous report)."),
        click.option("--force", is_flag=True,
                     help="Let -o replace an existing file or symlink that is not a previous report."),
        *_ENGINE_OPTIONS,
        pair_options(trust_help="Allow importing the target repo's own Python code for the module checks."),
        click.option("--adapter", metavar="FILE_OR_NAME",
                     help="Check the target as wrapped by this adapter: a shim file written by `dflash-check adapt` "
                     "(it is imported, i.e. run) or a built-in adapter name such as gpt2."),
        click.option("--config", "config_file", metavar="FILE",
                     help="Read settings from this file (a pyproject.toml with [tool.dflash-check], or a "
                     "dflash-check.toml) instead of the nearest one found from the current folder upward. Flags "
                     "given here win."),
        click.option("--no-config", is_flag=True, help="Ignore settings files."),
        engine_version_option(),
        click.option("--launch", "launch", metavar="COMMAND",
                     help="The launch command of the deployment, quoted (e.g. 'vllm serve T --speculative-config "
                     "...'): the pair is judged for its engine with the flags it gives, as `dflash-check launch` "
                     "judges that line, launch rules included. Replaces the engine options above."),
    ])(command)


def engine_version_option() -> Callable:
    return click.option(
        "--engine-version", "engine_versions", multiple=True, metavar="NAME==VERSION",
        help="Judge against this engine release (repeatable; engines: vllm, sglang, transformers, mlx-lm, dflash, "
        "speculators). Default: the version installed here, else the newest with bundled facts.")


def selected_versions(params: dict[str, Any], file_versions: Optional[dict[str, str]] = None):
    """The engine releases a command judges against: --engine-version > the settings file > installed > newest."""
    from dflash_compat.engines.registry import select_versions

    return select_versions(option=tuple(params.get("engine_versions") or ()), config=file_versions or {})


def _split(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


# CheckOptions fields that are about the inspection, not the deployment
_INSPECT = ("deep", "trust_remote_code", "adapter", "token", "engine", "complete")
def build_request(params: dict[str, Any], file_severity: Optional[dict[str, str]] = None,
                  file_versions: Optional[dict[str, str]] = None):
    """The CheckRequest for `check`'s command-line options (and a settings file's severity and
    engine-versions tables)."""
    from dataclasses import fields

    from dflash_compat.checker import BACKENDS
    from dflash_compat.deployment.options import OPTION_FLAGS, CheckOptions
    from dflash_compat.exceptions import InputError
    from dflash_compat.pipeline.check import CheckRequest

    if params["adapter"] and params["no_deep"]:
        raise InputError("--adapter changes the module facts, which --no-deep skips; drop one of them")
    options = CheckOptions(
        num_speculative_tokens=params["num_speculative_tokens"],
        tp=params["tp"],
        draft_tp=params["draft_tp"],
        sglang_num_draft_tokens=params["num_draft_tokens"],
        max_num_seqs=params["max_num_seqs"],
        max_num_batched_tokens=params["max_num_batched_tokens"],
        sglang_dflash_block_size=params["dflash_block_size"],
        sglang_draft_window_size=params["draft_window_size"],
        sglang_attn_dp_size=params["attn_dp_size"],
        sglang_attn_cp_size=params.get("attn_cp_size"),
        sglang_draft_attention_backend=params.get("draft_attention_backend"),
        sglang_enable_dp_lm_head=params["enable_dp_lm_head"],
        sglang_quantization=params["quantization"],
        sglang_draft_quantization=params["draft_quantization"],
        pp_size=params["pp_size"],
        llamacpp_draft_n_max=params.get("spec_draft_n_max"),
        deep=not params["no_deep"],
        trust_remote_code=params["trust_remote_code"],
        adapter=params["adapter"],
        token=params["token"],
    )
    backends = params["backends"]
    launch = None
    if params.get("launch"):
        from dflash_compat.deployment.commands import command_options

        given = [f.name for f in fields(CheckOptions) if f.name not in _INSPECT
                 and getattr(options, f.name) != getattr(CheckOptions(), f.name)]
        if given:
            flags = ", ".join(OPTION_FLAGS.get(g, g) for g in given)
            raise InputError(f"--launch gives the engine flags; leave out {flags} (or write them into the command)")
        launch, options = command_options(params["launch"], base=options)
        engine_backend = launch.engine
        if backends and engine_backend not in backends:
            raise InputError(f"--launch launches {launch.engine}; --backend {', '.join(backends)} does not judge it")
        backends = (engine_backend,)
    severity = _severity(params.get("severity", ()), file_severity or {})
    return CheckRequest(
        target=params["target"], draft=params["draft"], launch=launch,
        backends=[b for b in BACKENDS if b in backends] if backends else list(BACKENDS),
        select=_split(params["select"]), ignore=_split(params["ignore"]), options=options,
        revision=params["revision"], draft_revision=params["draft_revision"], token=params["token"],
        framework=params["framework"], strict=params["strict"], severity=severity,
        versions=selected_versions(params, file_versions),
    )


def _severity(values: tuple[str, ...], file_severity: dict[str, str]) -> dict[str, str]:
    """The settings file's severity table, then --severity CODE=LEVEL on top of it."""
    from dflash_compat.cli.commands.config_file import parse_severity
    from dflash_compat.exceptions import InputError

    out = dict(file_severity)
    entries = {}
    for value in _split(values):
        code, sep, level = value.partition("=")
        if not sep:
            raise InputError(f"--severity {value!r}: expected CODE=LEVEL (e.g. DF113=error)")
        entries[code.strip()] = level.strip()
    if entries:
        from dflash_compat.rules import ALL_RULES

        out.update(parse_severity(entries, [r.code for r in ALL_RULES], "--severity "))
    return out
