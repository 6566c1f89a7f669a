"""`dflash-check`: the command line. Only click is imported at start-up; everything else lazily."""

from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from typing import Any, Optional

import click

from dflash_compat import __version__
from dflash_compat.cli.commands.check_options import build_request, check_options
from dflash_compat.cli.commands.config_file import ConfigCommand
from dflash_compat.cli.errors import DEBUG_META, fail, internal_error, passes_through

GLOBAL_FLAGS = ("--debug",)  # options of `dflash-check` itself, given before the command

__all__ = ["main", "cli", "fail"]

# pydantic scans every installed package's entry points for plugins on first use (~35 ms);
# the CLI uses none, so skip the scan unless the user asked for plugins explicitly.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def _check_argv(args: list[str], ctx: click.Context) -> None:
    """What no real command line can hold, refused for every command at once: a NUL byte (execve cannot
    pass one; os calls raise ValueError) or a lone surrogate outside the U+DC80-U+DCFF that stand for
    undecodable bytes (os calls raise UnicodeEncodeError). Reachable in-process and from settings files."""
    for n, arg in enumerate(args, 1):
        if "\x00" in arg:
            raise click.UsageError(f"argument {n} holds a NUL byte", ctx)
        try:
            os.fsencode(arg)
        except UnicodeEncodeError as exc:
            raise click.UsageError(f"argument {n} is not valid Unicode (U+{ord(arg[exc.start]):04X} at character "
                                   f"{exc.start + 1})", ctx) from None


class DefaultCommandGroup(click.Group):
    """A group whose first argument, when it names no subcommand, is the TARGET of `check`."""

    default_command = "check"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _check_argv(args, ctx)
        leading = []  # global flags before the command (`dflash-check --debug smoke ...`)
        while args and args[0] in GLOBAL_FLAGS:
            leading.append(args[0])
            args = args[1:]
        if not args and not leading:  # plain `dflash-check` runs the check a settings file describes, else help
            from pathlib import Path

            from dflash_compat.cli.commands.config_file import find_config

            if find_config(Path.cwd()) is not None:
                args = [self.default_command]
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            from dflash_compat.cli.commands.suggest import mistyped_command

            near = mistyped_command(args[0], list(self.commands))
            if near is not None:
                raise click.UsageError(f"no such command {args[0]!r}; did you mean {near!r}?", ctx)
            args = [self.default_command, *args]
        if "--debug" in leading:
            ctx.meta[DEBUG_META] = True  # set before any subcommand runs, so a crash in its parsing is covered
        return super().parse_args(ctx, [*leading, *args])

    def invoke(self, ctx: click.Context) -> Any:
        """Every subcommand ends here: its user errors (and usage errors) as one line with their exit
        code, anything else as one "internal error" line with EXIT_INTERNAL (3), never exit 1."""
        from dflash_compat.exceptions import DFlashCompatError

        try:
            return super().invoke(ctx)
        except (DFlashCompatError, click.UsageError) as exc:
            fail(exc)
        except Exception as exc:  # noqa: BLE001 - a crash is exit 3 with one line, whatever the command
            if passes_through(exc) or isinstance(exc, click.ClickException):
                raise
            internal_error(exc, ctx.invoked_subcommand or ctx.info_name, ctx)


@click.group(cls=DefaultCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dflash-check")
@click.option("--debug", is_flag=True, expose_value=False, is_eager=True,
              help="Print the traceback of an internal error (exit 3); also DFLASH_CHECK_DEBUG=1. Give it before "
              "the command: dflash-check --debug smoke ...")
def cli() -> None:
    """Check that a DFlash draft model can work with a target LLM, before you download weights.

    \b
      dflash-check TARGET --draft DRAFT   preflight check (the default command)
      dflash-check                        the check a settings file describes
      dflash-check rules                  list every rule
      dflash-check rule DF101             explain one rule
      dflash-check schema                 JSON Schema of the specs and report

    TARGET and DRAFT are local folders or Hugging Face Hub repo ids (org/name[@revision]).
    Settings files: `dflash-check check --help`.

    \b
    Exit codes (every command):
      0  compatible / passed
      1  incompatible for a selected backend / the run failed its test
      2  bad input or usage (one line on stderr says what)
      3  internal error: dflash-check itself broke (one line;
         `dflash-check --debug ...` prints the traceback)
    """


@cli.command("check", cls=ConfigCommand)
@check_options
def check_cmd(fmt: str, output: Optional[str], force: bool, **params: Any) -> None:
    """Check TARGET against DRAFT for every selected backend.

    Settings (target, draft, backends, select / ignore, severity, engine options, strict, format,
    output) can live in [tool.dflash-check] of a pyproject.toml or in a dflash-check.toml, found from
    the current folder upward; command-line flags win over them.
    """
    with _imports_frozen():
        from dflash_compat.pipeline.check import run_check
        from dflash_compat.rules import ALL_RULES  # noqa: F401 - run_check's rules, imported here with the collector paused

    meta = click.get_current_context().meta
    req = build_request(params, meta.get("dflash_check.severity"), meta.get("dflash_check.engine_versions"))
    out = _Output(output, force, (req.target, req.draft)) if output else None  # refused before the work
    with _progress(req):
        report = run_check(req)
    text = _render(report, fmt, output)
    if out is None:  # color=True: click must not strip what we decided (styles only when color_enabled said so)
        click.echo(text, nl=False, color=True)
    else:
        out.write(text)
    sys.exit(report.exit_code())


# True while main(), the console script, runs: in the dflash-check process itself start-up's objects may be
# frozen for the rest of the process; not where the CLI runs inside another program (tests, CliRunner).
_WHOLE_PROCESS = False


@contextmanager
def _imports_frozen():
    """Import a command's modules with Python's cyclic garbage collector paused, then freeze what exists
    (gc.freeze: never scanned again). Importing the check leaves about 45,000 objects the collector
    tracks (modules, classes, functions, pydantic's schemas), all alive until the process ends; without
    this the collector scans them some 50 times on the way and once more at exit, and frees none of
    them: a fifth of what a config-only check cost above the one-model reference (README, "Measured
    figures").
    Only in the dflash-check process itself: a caller's own garbage must stay collectable."""
    if not _WHOLE_PROCESS or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _progress(req):
    """A transient line on stderr while the deep check builds the target (only on a terminal: CI logs stay clean)."""
    from contextlib import nullcontext

    if not req.options.deep:
        return nullcontext()
    from dflash_compat.terminal import make_console

    console = make_console(stderr=True)
    return console.status(f"building {req.target} without weights ...") if console.is_terminal else nullcontext()


def _render(report, fmt: str, output: Optional[str]) -> str:
    from dflash_compat.emitters import get_renderer

    render = get_renderer(fmt)
    if fmt != "text":
        return render(report)
    if output:
        return render(report, width=120)
    from dflash_compat.terminal import color_enabled, terminal_width

    # on a terminal: its width and colour; piped or in a CI log: COLUMNS, else 80, and no colour
    return render(report, width=terminal_width(sys.stdout), color=color_enabled(sys.stdout))


class _Output:
    """`check -o FILE`: checked when the command starts, written atomically at its end (safe_write)."""

    def __init__(self, path: str, force: bool, refs: tuple[str, str]) -> None:
        from dflash_compat.emitters import looks_like_report
        from dflash_compat.files.safe_write import check_output, model_folders

        self.kw = {"force": force, "option": "-o", "is_ours": looks_like_report, "protected": model_folders(*refs)}
        self.path = path
        check_output(path, **self.kw)

    def write(self, text: str) -> None:
        from dflash_compat.files.safe_write import write_output

        write_output(self.path, text, **self.kw)


@cli.command("rules", short_help="List every rule, one line each.")
@click.option("--format", "-f", "fmt", type=click.Choice(("text", "json", "markdown")), default="text",
              show_default=True,
              help="text: a table; json: every rule with its documentation; markdown: the README table.")
def rules_cmd(fmt: str) -> None:
    """List every rule: code, name, severity, backends and what it checks."""
    from dflash_compat.cli.ruledocs import rules_json, rules_markdown
    from dflash_compat.rules import ALL_RULES

    if fmt == "json":
        click.echo(rules_json(ALL_RULES))
    elif fmt == "markdown":
        click.echo(rules_markdown(ALL_RULES), nl=False)
    else:
        from dflash_compat.cli.console import make_console, render_rules

        render_rules(ALL_RULES, make_console())


@cli.command("rule", short_help="Explain one rule: what it checks, why, an example, the fix.")
@click.argument("code")
@click.option("--engine-version", "engine_versions", multiple=True, metavar="NAME==VERSION",
              help="Show the engine code at this release (repeatable); default: the installed one, else the newest "
              "bundled.")
def rule_cmd(code: str, engine_versions: tuple[str, ...]) -> None:
    """Explain one rule (e.g. `dflash-check rule DF101`): what it checks, why, an example, the fix, and the
    engine code it rests on at the releases selected."""
    from dflash_compat.engines.registry import select_versions
    from dflash_compat.exceptions import InputError
    from dflash_compat.rules import get_rule

    rule = get_rule(code)
    if rule is None:
        raise InputError(f"no rule {code!r}; `dflash-check rules` lists them")
    versions = select_versions(option=engine_versions)
    from dflash_compat.cli.console import make_console, render_rule

    render_rule(rule, make_console(), versions)


@cli.command("schema", short_help="Print the JSON Schema of the specs and the report.")
@click.option("--model", "which", type=click.Choice(("all", "draft", "target", "report")), default="all",
              show_default=True,
              help="Which schema to print.")
def schema_cmd(which: str) -> None:
    """Print the JSON Schema of the draft spec, the target spec and the check report."""
    import json

    from dflash_compat.checker.report import json_schema
    from dflash_compat.specs import DraftSpec, TargetSpec

    schemas = {
        "draft": DraftSpec.model_json_schema(),
        "target": TargetSpec.model_json_schema(),
        "report": json_schema(),
    }
    out = schemas if which == "all" else schemas[which]
    click.echo(json.dumps(out, indent=2))


def _register_optional_commands() -> None:
    """Subcommands that live in their own modules (smoke, adapt); each registers itself lazily."""
    from dflash_compat.cli.commands import COMMANDS

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
    global _WHOLE_PROCESS
    _WHOLE_PROCESS = True
    try:
        cli.main(prog_name="dflash-check", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        fail(exc)
    except click.Abort:
        click.echo("dflash-check: aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - outside any command (the group's own parsing): still exit 3
        if passes_through(exc):
            raise
        internal_error(exc)
    finally:
        _WHOLE_PROCESS = False  # main() called inside another program (a test) leaves it as it was


if __name__ == "__main__":  # pragma: no cover
    main()
