"""How an error ends a run: a user error is one stderr line with its exit code, a crash one stderr
line with EXIT_INTERNAL (3), its traceback only with `--debug` (or DFLASH_CHECK_DEBUG=1).

Commands never call into the CLI to report errors: they raise a DFlashCompatError (exceptions.py)
and the CLI group renders it here, once, for every present and future subcommand. An exception that
is not ours is a bug in dflash-check, never a verdict: it must not exit 1 ("the pair is bad"), which a
CI gate would read as a failed check.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional

import click

from dflash_compat.exceptions import EXIT_INTERNAL, DFlashCompatError, error_line

__all__ = ["fail", "internal_error", "debug_enabled", "DEBUG_ENV", "DEBUG_META"]

DEBUG_ENV = "DFLASH_CHECK_DEBUG"  # =1: print the traceback of an internal error (like --debug)
DEBUG_META = "dflash_check.debug"  # ctx.meta key the group's --debug sets


def debug_enabled(ctx: Optional[click.Context] = None) -> bool:
    """Whether `--debug` was given (on this run's context tree) or DFLASH_CHECK_DEBUG is set to 1/true/yes."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(DEBUG_META):
        return True
    return os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")


MAX_LINE = 1000  # characters of a message shown (a 100,000-character path stays readable)


def _one_line(text: str) -> str:
    from dflash_compat.emitters._safe import printable

    # one line, and no control or reordering characters from a hostile value reach the terminal
    text = " ".join(text.split())
    if len(text) > MAX_LINE:
        text = f"{text[:MAX_LINE]} ... ({len(text) - MAX_LINE} more characters)"
    return printable(text)


def fail(exc: Exception) -> NoReturn:
    """The one place a user error becomes one line on stderr and an exit code: a DFlashCompatError
    (its own code, 2 for bad input) or a click usage error (2), whatever its message holds."""
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
    message = _one_line(message) or f"{type(exc).__name__} (no message)"
    from dflash_compat.terminal import error_text

    click.echo(error_text(f"dflash-check: error: {message}{hint}", sys.stderr), err=True)
    sys.exit(code)


def internal_error(exc: BaseException, command: Optional[str] = None, ctx: Optional[click.Context] = None) -> NoReturn:
    """An exception dflash-check did not expect: one line naming the command and the exception, exit
    EXIT_INTERNAL; the traceback before it only in debug mode."""
    if debug_enabled(ctx):
        import traceback

        click.echo("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip("\n"), err=True)
        hint = ""
    else:
        hint = "; rerun with --debug for the traceback"
    where = _one_line(command or "dflash-check")
    click.echo(f"dflash-check: internal error in {where}: {_one_line(error_line(exc))}{hint}", err=True)
    sys.exit(EXIT_INTERNAL)


def is_ours(exc: BaseException) -> bool:
    """A user error (one line, its own code) rather than a crash."""
    return isinstance(exc, (DFlashCompatError, click.ClickException))


def passes_through(exc: BaseException) -> bool:
    """What click and Python handle themselves: --help/--version exits, Ctrl-C, sys.exit()."""
    return isinstance(exc, (click.exceptions.Exit, click.Abort, KeyboardInterrupt, SystemExit, GeneratorExit))
