"""`dflash-check`: the command line. Only click is imported at start-up; everything else lazily."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn, Optional

import click

from . import __version__

__all__ = ["main", "cli", "fail"]

# pydantic scans every installed package's entry points for plugins on first use (~35 ms);
# the CLI uses none, so skip the scan unless the user asked for plugins explicitly.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

BACKEND_CHOICES = ("transformers", "vllm", "sglang", "mlx")
FORMAT_CHOICES = ("text", "json", "sarif", "junit", "github")


class DefaultCommandGroup(click.Group):
    """A group whose first argument, when it names no subcommand, is the TARGET of `check`."""

    default_command = "check"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Every subcommand's user errors (and its usage errors) end here as one line."""
        from .exceptions import DFlashCompatError

        try:
            return super().invoke(ctx)
        except (DFlashCompatError, click.UsageError) as exc:
            fail(exc)


def fail(exc: Exception) -> NoReturn:
    """The one place a user error becomes one line on stderr and an exit code: a DFlashCompatError
    (its own code, 2 for bad input) or a click usage error (2), whatever its message holds."""
    from .exceptions import DFlashCompatError

    if isinstance(exc, click.exceptions.NoArgsIsHelpError):  # plain `dflash-check`: show the help
        click.echo(exc.format_message(), err=True)
        sys.exit(exc.exit_code)
    hint = ""
    if isinstance(exc, click.ClickException):
        message, code = exc.format_message(), exc.exit_code
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see `{exc.ctx.command_path} --help`)"
    else:
        message, code = str(exc), exc.exit_code if isinstance(exc, DFlashCompatError) else 2
    message = " ".join(message.split()) or f"{type(exc).__name__} (no message)"
    click.echo(f"dflash-check: error: {message}{hint}", err=True)
    sys.exit(code)


def _split(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


@click.group(cls=DefaultCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dflash-check")
def cli() -> None:
    """Check that a DFlash draft model can work with a target LLM, before you download weights.

    \b
      dflash-check TARGET --draft DRAFT      preflight check (the default command)
      dflash-check rules                     list every rule
      dflash-check rule DF101                explain one rule
      dflash-check schema                    JSON Schema of the specs and the report

    TARGET and DRAFT are local folders or Hugging Face Hub repo ids (org/name[@revision]).
    Exit codes: 0 compatible, 1 incompatible for a selected backend, 2 bad input.
    """


@cli.command("check")
@click.argument("target")
@click.option("--draft", "-d", required=True, help="The DFlash draft: a local folder or a Hub repo id.")
@click.option(
    "--backend", "-b", "backends", multiple=True, type=click.Choice(BACKEND_CHOICES),
    help="Check only this serving backend; repeat for several. Default: all of them.",
)
@click.option("--select", multiple=True,
              help="Run only rules whose code matches this code or prefix (e.g. DF1, DF303).")
@click.option("--ignore", multiple=True, help="Skip rules whose code matches this code or prefix.")
@click.option("--strict", is_flag=True, help="Treat warnings as failures for the exit code.")
@click.option(
    "--format", "-f", "fmt", type=click.Choice(FORMAT_CHOICES), default="text", show_default=True,
    help="Output format; json, sarif and junit are for CI.",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="Write the report to this file instead of stdout (never through a symlink, never into a "
              "model folder; an existing file only if it is a previous report).")
@click.option("--force", is_flag=True, help="Let -o replace an existing file or symlink that is not a previous report.")
@click.option("--num-speculative-tokens", type=click.IntRange(min=1),
              help="vLLM num_speculative_tokens you will launch with (default: block_size - 1).")
@click.option("--num-draft-tokens", type=click.IntRange(min=1),
              help="SGLang --speculative-num-draft-tokens you will launch with (should equal block_size).")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tensor-parallel size of the target.")
@click.option("--draft-tp", type=click.IntRange(min=1),
              help="Tensor-parallel size of the draft (vLLM: 1 or the target's).")
@click.option("--max-num-seqs", type=click.IntRange(min=1), help="vLLM --max-num-seqs, to check the token budget.")
@click.option("--max-num-batched-tokens", type=click.IntRange(min=1),
              help="vLLM --max-num-batched-tokens, to check the token budget.")
@click.option("--revision", help="Hub revision of TARGET (also TARGET@revision).")
@click.option("--draft-revision", help="Hub revision of DRAFT (also DRAFT@revision).")
@click.option("--token", envvar="HF_TOKEN",
              help="Hugging Face token for private or gated repos (default: HF_TOKEN or the saved login).")
@click.option("--no-deep", is_flag=True,
              help="Check configs only: do not build the module tree or read weight headers.")
@click.option("--trust-remote-code", is_flag=True,
              help="Allow importing the target repo's own Python code for the module checks.")
@click.option(
    "--framework", type=click.Choice(("auto", "torch", "mlx")), default="auto", show_default=True,
    help="How to inspect the target's modules: transformers (torch) or mlx-lm; auto-detected.",
)
@click.option(
    "--adapter", metavar="FILE_OR_NAME",
    help="Check the target as wrapped by this adapter: a shim file written by `dflash-check adapt` "
    "(it is imported, i.e. run) or a built-in adapter name such as gpt2.",
)
def check_cmd(fmt: str, output: Optional[str], force: bool, **params: Any) -> None:
    """Check TARGET against DRAFT for every selected backend."""
    from .check import run_check

    req = _request(params)
    out = _Output(output, force, (req.target, req.draft)) if output else None  # refused before the work
    with _progress(req):
        report = run_check(req)
    text = _render(report, fmt, output)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write(text)
    sys.exit(report.exit_code())


def _request(params: dict[str, Any]):
    """The CheckRequest for `check`'s command-line options."""
    from .check import CheckRequest
    from .engine import BACKENDS
    from .exceptions import InputError
    from .options import CheckOptions

    if params["adapter"] and params["no_deep"]:
        raise InputError("--adapter changes the module facts, which --no-deep skips; drop one of them")
    options = CheckOptions(
        num_speculative_tokens=params["num_speculative_tokens"],
        tp=params["tp"],
        draft_tp=params["draft_tp"],
        sglang_num_draft_tokens=params["num_draft_tokens"],
        max_num_seqs=params["max_num_seqs"],
        max_num_batched_tokens=params["max_num_batched_tokens"],
        deep=not params["no_deep"],
        trust_remote_code=params["trust_remote_code"],
        adapter=params["adapter"],
        token=params["token"],
    )
    backends = params["backends"]
    return CheckRequest(
        target=params["target"], draft=params["draft"],
        backends=[b for b in BACKENDS if b in backends] if backends else list(BACKENDS),
        select=_split(params["select"]), ignore=_split(params["ignore"]), options=options,
        revision=params["revision"], draft_revision=params["draft_revision"], token=params["token"],
        framework=params["framework"], strict=params["strict"],
    )


def _progress(req):
    """A transient line on stderr while the deep check builds the target (only on a terminal: CI logs stay clean)."""
    from contextlib import nullcontext

    if not req.options.deep:
        return nullcontext()
    from .console import make_console

    console = make_console(stderr=True)
    return console.status(f"building {req.target} without weights ...") if console.is_terminal else nullcontext()


def _render(report, fmt: str, output: Optional[str]) -> str:
    from .emitters import get_renderer

    render = get_renderer(fmt)
    if fmt != "text":
        return render(report)
    if output:
        return render(report, width=120)
    # on a terminal: its width and colour; piped: the width rich detects (COLUMNS, else 80), no colour
    return render(report, width=None, color=sys.stdout.isatty())


class _Output:
    """`check -o FILE`: checked when the command starts, written atomically at its end (safe_write)."""

    def __init__(self, path: str, force: bool, refs: tuple[str, str]) -> None:
        from .emitters import looks_like_report
        from .safe_write import check_output, model_folders

        self.kw = {"force": force, "option": "-o", "is_ours": looks_like_report, "protected": model_folders(*refs)}
        self.path = path
        check_output(path, **self.kw)

    def write(self, text: str) -> None:
        from .safe_write import write_output

        write_output(self.path, text, **self.kw)


@cli.command("rules")
@click.option("--format", "-f", "fmt", type=click.Choice(("text", "json", "markdown")), default="text",
              show_default=True,
              help="text: a table; json: every rule with its documentation; markdown: the README table.")
def rules_cmd(fmt: str) -> None:
    """List every rule: code, name, severity, backends and what it checks."""
    from .docs import rules_json, rules_markdown
    from .rules import ALL_RULES

    if fmt == "json":
        click.echo(rules_json(ALL_RULES))
    elif fmt == "markdown":
        click.echo(rules_markdown(ALL_RULES), nl=False)
    else:
        from .console import make_console, render_rules

        render_rules(ALL_RULES, make_console())


@cli.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """Explain one rule (e.g. `dflash-check rule DF101`): what it checks, why, an example, the fix."""
    from .exceptions import InputError
    from .rules import get_rule

    rule = get_rule(code)
    if rule is None:
        raise InputError(f"no rule {code!r}; `dflash-check rules` lists them")
    from .console import make_console, render_rule

    render_rule(rule, make_console())


@cli.command("schema")
@click.option("--model", "which", type=click.Choice(("all", "draft", "target", "report")), default="all",
              show_default=True,
              help="Which schema to print.")
def schema_cmd(which: str) -> None:
    """Print the JSON Schema of the draft spec, the target spec and the check report."""
    import json

    from .report import json_schema
    from .specs import DraftSpec, TargetSpec

    schemas = {
        "draft": DraftSpec.model_json_schema(),
        "target": TargetSpec.model_json_schema(),
        "report": json_schema(),
    }
    out = schemas if which == "all" else schemas[which]
    click.echo(json.dumps(out, indent=2))


def _register_optional_commands() -> None:
    """Subcommands that live in their own modules (smoke, adapt); each registers itself lazily."""
    from .commands import COMMANDS

    for name, (module, attr, short_help) in COMMANDS.items():
        cli.add_command(_LazyCommand(name, module, attr, short_help))


class _LazyCommand(click.Command):
    """Loads the real command only when it is invoked or asked for its help."""

    def __init__(self, name: str, module: str, attr: str, short_help: str) -> None:
        super().__init__(name, short_help=short_help, help=short_help)
        self._target = (module, attr)
        self._real: Optional[click.Command] = None

    def _load(self) -> click.Command:
        if self._real is None:
            import importlib

            self._real = getattr(importlib.import_module(self._target[0]), self._target[1])
        return self._real

    def main(self, *args, **kwargs):  # pragma: no cover - delegated
        return self._load().main(*args, **kwargs)

    def make_context(self, info_name, args, parent=None, **extra):
        return self._load().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        return self._load().invoke(ctx)

    def get_params(self, ctx):
        return self._load().get_params(ctx)

    def get_help(self, ctx):
        return self._load().get_help(ctx)


_register_optional_commands()


def main() -> None:
    """The console script. Usage errors (a missing argument, a bad option value) are one line on
    stderr with exit 2, like every other input error; `--help` shows the full usage."""
    try:
        cli.main(prog_name="dflash-check", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        fail(exc)
    except click.Abort:
        click.echo("dflash-check: aborted", err=True)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
