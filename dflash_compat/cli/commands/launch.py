"""`dflash-check launch FILE...`: the engine launches in shell scripts, Dockerfiles, compose files,
Kubernetes manifests and GitHub Actions workflows, each checked at the engine version it pins."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import click

from dflash_compat.cli.commands.check_options import _split

__all__ = ["launch_cmd"]

_FORMATS = ("text", "json", "sarif", "junit", "github", "markdown")
# the settings-file keys `launch` reads (the rest of [tool.dflash-check] belongs to `check`)
_FILE_KEYS = {"select", "ignore", "strict", "format", "no-deep", "engine-version"}


class LaunchConfigCommand(click.Command):
    """Reads `select`, `ignore`, `severity`, `strict`, `format` and `engine-versions` from the settings file
    `check` uses (found the same way; --config / --no-config), ignoring check's pair options."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if any(a in ("--help", "-h") for a in args):
            return super().parse_args(ctx, args)
        from dflash_compat.cli.commands.config_file import (
            _chosen_file,
            _convert,
            _read_toml,
            _table,
            _where,
            find_config,
            parse_severity,
        )
        from dflash_compat.exceptions import InputError

        chosen, off = _chosen_file(args)
        if chosen is not None and off:
            raise click.UsageError("--config and --no-config contradict each other", ctx)
        path = Path(chosen) if chosen else (None if off else find_config(Path.cwd()))
        if chosen and not path.exists():
            raise InputError(f"--config {chosen}: no such file")
        if path is None:
            return super().parse_args(ctx, args)
        table = _table(path, _read_toml(path)) or {}
        where = _where(path)
        params = {p.name: p for p in self.params}
        defaults: dict[str, Any] = {}
        for key, value in table.items():
            norm = key.replace("_", "-")
            if norm == "severity" and isinstance(value, dict):
                from dflash_compat.rules import ALL_RULES

                ctx.meta["dflash_check.severity"] = parse_severity(value, [r.code for r in ALL_RULES],
                                                                   f"{where} severity.")
            elif norm == "engine-versions":
                if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                    raise InputError(f"{where} engine-versions: expected a table like {{vllm = \"0.34.0\"}}")
                ctx.meta["dflash_check.engine_versions"] = dict(value)
            elif norm in _FILE_KEYS:
                name = "fmt" if norm == "format" else norm.replace("-", "_")
                defaults[name] = _convert(params[name], key, value, ctx, where)
        ctx.default_map = {**(ctx.default_map or {}), **defaults}
        return super().parse_args(ctx, args)


@click.command("launch", cls=LaunchConfigCommand)
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-c", "--command", "commands", multiple=True, metavar="COMMAND",
              help="Check this one launch command line (repeat for several).")
@click.option("--engine-version", "engine_version", multiple=True, metavar="NAME==VERSION",
              help="Judge every launch of engine NAME at VERSION, whatever the files pin (e.g. vllm==0.34.0).")
@click.option("--format", "-f", "fmt", type=click.Choice(_FORMATS), default="text", show_default=True,
              help="Output format; json is one document with a report per launch; sarif, junit and github "
              "mark FILE:LINE:COLUMN.")
@click.option("--strict", is_flag=True, help="Treat warnings as failures for the exit code.")
@click.option("--select", multiple=True, help="Run only rules whose code matches this code or prefix.")
@click.option("--ignore", multiple=True, help="Skip rules whose code matches this code or prefix.")
@click.option("--severity", "severity", multiple=True, metavar="CODE=LEVEL",
              help="Report a rule at this level: error, warning, info, or ignore.")
@click.option("--fix", is_flag=True, help="Show each launch's command corrected for its engine version, where the "
              "rules know the correction (the files are never changed).")
@click.option("--require-launch", is_flag=True, help="A file with no engine launch in it is an error (exit 2).")
@click.option("--no-deep", is_flag=True, help="Check the pairs' configs only: do not build the target's module "
              "tree or read the draft's weight headers.")
@click.option("--no-pair", is_flag=True, help="Run only the launch rules (DF9xx): do not read the models.")
@click.option("--token", envvar="HF_TOKEN", help="Hugging Face token for private or gated repos.")
@click.option("--config", "config_file", metavar="FILE", help="Read settings from this file instead of the nearest "
              "dflash-check.toml / pyproject.toml.")
@click.option("--no-config", is_flag=True, help="Ignore settings files.")
def launch_cmd(files: tuple[str, ...], commands: tuple[str, ...], engine_version: tuple[str, ...], fmt: str,
               strict: bool, select: tuple[str, ...], ignore: tuple[str, ...], severity: tuple[str, ...], fix: bool,
               require_launch: bool, no_deep: bool, no_pair: bool, token: Optional[str], config_file: Optional[str],
               no_config: bool) -> None:
    """Check the engine launches in FILE... (shell scripts, Dockerfiles, compose files, Kubernetes
    manifests, GitHub Actions workflows, SkyPilot tasks): each launch's pair and flags at the engine version the file
    pins (image tag, then pip pin, else the newest bundled). Nothing in the files is run.

    FILE `-` is standard input (helm template RELEASE CHART | dflash-check launch -).

    Exit codes: 0 every launch passes, 1 a launch fails, 2 a file cannot be read (invalid YAML,
    unbalanced quotes, a Helm template, larger than 4 MiB or more than 60 s of CPU time to read; the other files
    are judged all the same, and the worst result is the exit code; a file with no launch only with
    --require-launch).
    """
    from dflash_compat.cli.commands.check_options import _severity
    from dflash_compat.cli.launch_render import exit_code, render
    from dflash_compat.exceptions import InputError
    from dflash_compat.pipeline.launch import FileResult, LaunchSettings, check_files, check_text
    from dflash_compat.terminal import error_text

    if not files and not commands:
        raise click.UsageError("give launch FILEs or -c 'COMMAND'")
    ctx = click.get_current_context()
    versions: dict[str, str] = {}
    for spec in _split(engine_version):
        name, sep, version = spec.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise InputError(f"--engine-version {spec!r}: expected NAME==VERSION (e.g. vllm==0.34.0)")
        versions[name.strip()] = version.strip()
    settings = LaunchSettings(
        select=_split(select), ignore=_split(ignore),
        severity=_severity(severity, ctx.meta.get("dflash_check.severity") or {}), strict=strict,
        engine_versions=versions, config_versions=ctx.meta.get("dflash_check.engine_versions", {}),
        deep=not no_deep, token=token, pair=not no_pair,
    )
    results = check_files(list(files), settings)
    for i, c in enumerate(commands, 1):
        name = f"<command {i}>" if len(commands) > 1 else "<command>"
        try:
            results.append(check_text(name, c, settings))
        except InputError as e:  # a command that cannot be read: a result like a file's
            results.append(FileResult(name, "unread", [], error=getattr(e, "reason", str(e)),
                                      error_line=getattr(e, "line", 0)))
    if all(r.error for r in results):
        # nothing could be read: the errors alone, one line each, as every other bad input (exit 2)
        for r in results[:-1]:
            click.echo(error_text(f"dflash-check: error: {r.error_text}", sys.stderr), err=True)
        raise InputError(results[-1].error_text)
    empty = [r.file for r in results if not r.launches and not r.error]
    if empty and require_launch:
        raise InputError(f"{empty[0]}: no engine launch found (--require-launch)")
    from dflash_compat.terminal import terminal_width

    text = render(results, fmt, strict=strict, fix=fix, width=terminal_width(sys.stdout))
    click.echo(text, nl=False)
    sys.exit(exit_code(results, strict))
