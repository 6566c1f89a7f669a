"""The CI gate's settings in a file: `[tool.dflash-check]` in a `pyproject.toml`, or a `dflash-check.toml`.

Found from the current directory upward (in each folder `dflash-check.toml` first, then a
`pyproject.toml` that has the table), or named with `--config FILE`; `--no-config` ignores them.
Keys are the long names of `check`'s options (`num-speculative-tokens = 15`, `backends = ["vllm"]`,
`format = "sarif"`) plus `target`, `draft` and a `severity` table of per-rule overrides. A value is
a default: a flag on the command line wins. Local paths (target, draft, output) are relative to the
file's folder. Settings that run code, hold secrets or overwrite files (`trust-remote-code`,
`adapter`, `token`, `force`) are refused in a file: a repository's config must not switch them on
for whoever runs the check.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Optional

import click

from dflash_compat.exceptions import InputError

__all__ = ["CONFIG_NAME", "ConfigCommand", "SEVERITY_LEVELS", "find_config", "load_settings", "parse_severity"]

CONFIG_NAME = "dflash-check.toml"
TABLE = ("tool", "dflash-check")
SEVERITY_LEVELS = ("error", "warning", "info", "ignore")
MAX_CONFIG_BYTES = 1024 * 1024
# file key -> check's parameter name, where they differ
_RENAMED = {"format": "fmt"}
_REFUSED = {
    "trust-remote-code": "it would run the model repository's own code; pass --trust-remote-code yourself",
    "adapter": "it imports (runs) a Python file; pass --adapter yourself",
    "token": "a token does not belong in a file; set HF_TOKEN",
    "force": "it lets -o replace a file that is not a report; pass --force yourself",
}
_NOT_SETTINGS = ("config-file", "no-config")  # the options that choose the file itself
_PATHS = ("target", "draft", "output")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    from dflash_compat.files.safe_read import read_text

    text = read_text(path, MAX_CONFIG_BYTES)  # a regular file of bounded size (a FIFO never blocks it)
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise InputError(f"{path}: not valid TOML (nested too deeply); --no-config ignores settings files") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc}); --no-config ignores settings files") from None


def _table(path: Path, data: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The settings in a parsed file: a pyproject's [tool.dflash-check] (None when it has none), or the
    whole of a dflash-check.toml."""
    if path.name != "pyproject.toml":
        return data
    table = data.get(TABLE[0], {})
    table = table.get(TABLE[1]) if isinstance(table, dict) else None
    if table is not None and not isinstance(table, dict):
        raise InputError(f"{path}: [tool.dflash-check] must be a table")
    return table


# Spellings of tool.dflash-check in TOML: `[tool.dflash-check]`, `tool."dflash-check".x = ...` (the key
# after "tool" and a dot), or `dflash-check` as a key of a `[tool]` table or of an inline `tool = {...}`.
_TOOL_DOTTED = re.compile(rb"""\btool["']?\s*\.\s*["']?dflash-check\b""")
_TOOL_TABLE = re.compile(rb"""^\s*(\[\s*["']?tool["']?\s*\]|["']?tool["']?\s*=)""", re.MULTILINE)


def _may_hold_table(pyproject: Path) -> bool:
    """False when the file cannot hold [tool.dflash-check]: most projects' pyproject.toml is then never
    parsed, which keeps tomllib's import and its regexes off a check's start-up."""
    try:
        with pyproject.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        return True  # let _read_toml report it
    if TABLE[1].encode() not in data:
        return False
    return bool(_TOOL_DOTTED.search(data) or _TOOL_TABLE.search(data))


def find_config(start: Path) -> Optional[Path]:
    """The nearest settings file from `start` upward: dflash-check.toml, else a pyproject.toml with
    [tool.dflash-check]; None when there is none."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _may_hold_table(pyproject) and _table(pyproject, _read_toml(pyproject)) is not None:
            return pyproject
    return None


def _where(path: Path) -> str:
    return f"{path}: [tool.dflash-check]" if path.name == "pyproject.toml" else str(path)


def parse_severity(entries: dict[str, Any], codes: list[str], label: str) -> dict[str, str]:
    """{code or code prefix: level} checked against the rule codes and the levels; errors name
    `label` + the key (`pyproject.toml: [tool.dflash-check] severity.DF113`, `--severity DF113`)."""
    out = {}
    for key, level in entries.items():
        if not isinstance(level, str) or level not in SEVERITY_LEVELS:
            raise InputError(f"{label}{key}: expected one of {', '.join(SEVERITY_LEVELS)}, got {level!r}")
        code = key.upper()
        if not code or not any(c.startswith(code) for c in codes):
            raise InputError(f"{label}{key}: matches no rule code (codes look like DF101; "
                             "`dflash-check rules` lists them)")
        out[code] = level
    return out


def _convert(param: click.Parameter, key: str, value: Any, ctx: click.Context, where: str) -> Any:
    """A file value for `param`, held to the type the option takes (no silent string-to-number)."""
    def bad(expected: str) -> InputError:
        return InputError(f"{where} {key}: expected {expected}, got {type(value).__name__} {value!r}")

    if isinstance(param, click.Option) and param.is_flag:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if param.multiple:
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise bad("a string or a list of strings")
        return [_convert_one(param, key, v, ctx, where) for v in values]
    numeric = isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType))
    if numeric and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise bad("a number")
    if not numeric and not isinstance(value, str):
        raise bad("a string")
    return _convert_one(param, key, value, ctx, where)


def _convert_one(param: click.Parameter, key: str, value: Any, ctx: click.Context, where: str) -> Any:
    if isinstance(value, str) and "\x00" in value:  # TOML's \u0000: os calls (click.Path) raise ValueError
        raise InputError(f"{where} {key}: holds a NUL byte")
    try:
        return param.type.convert(value, param, ctx)
    except click.BadParameter as exc:
        raise InputError(f"{where} {key}: {exc.message}") from None


def _local(value: str, folder: Path, always: bool) -> str:
    """A path from the file, relative to the file's folder; a Hub id (`org/name`) stays as it is. Inside
    the current folder it is given relative to it, so that reports name files as the checkout does
    (SARIF and annotations point into the repository)."""
    if value.startswith("~"):
        return os.path.expanduser(value)
    candidate = folder / value
    if not (always or value.startswith((".", "/")) or candidate.exists()):
        return value
    path = os.path.normpath(candidate.absolute())
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def load_settings(path: Path, command: click.Command, ctx: click.Context) -> tuple[dict[str, Any], dict[str, str]]:
    """`check`'s defaults from the file at `path` (parameter name -> value) and its severity table."""
    table = _table(path, _read_toml(path))
    if table is None:
        raise InputError(f"{path}: has no [tool.dflash-check] table")
    where = _where(path)
    params = {p.name: p for p in command.params}
    defaults: dict[str, Any] = {}
    severity: dict[str, str] = {}
    for key, value in table.items():
        name = _RENAMED.get(key, key.replace("-", "_"))
        if key in _REFUSED or key.replace("_", "-") in _REFUSED:
            raise InputError(f"{where} {key}: not allowed in a config file: {_REFUSED[key.replace('_', '-')]}")
        if key in ("engine-versions", "engine_versions"):
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise InputError(f"{where} {key}: expected a table like {{vllm = \"0.33.0\"}}")
            from dflash_compat.engines.registry import select_versions

            select_versions(config=value, installed=False)  # a malformed entry fails here, naming the file
            ctx.meta["dflash_check.engine_versions"] = {str(k).lower(): v for k, v in value.items()}
            continue
        if key == "severity":
            if not isinstance(value, dict):
                raise InputError(f"{where} severity: expected a table like {{DF203 = \"ignore\"}}")
            from dflash_compat.rules import ALL_RULES

            severity = parse_severity(value, [r.code for r in ALL_RULES], f"{where} severity.")
            continue
        if name not in params or key.replace("_", "-") in _NOT_SETTINGS or name == "severity":
            raise InputError(f"{where}: unknown key {key!r} (keys are the long option names of "
                             "`dflash-check check --help`, plus target, draft, severity and engine-versions)")
        converted = _convert(params[name], key, value, ctx, where)
        if key in _PATHS:
            converted = _local(converted, path.parent, always=key == "output")
        defaults[name] = converted
    return defaults, severity


def _chosen_file(args: list[str]) -> tuple[Optional[str], bool]:
    """--config FILE / --config=FILE and --no-config, read before click parses (they decide the defaults)."""
    chosen, off = None, False
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--no-config":
            off = True
        elif arg == "--config" and i + 1 < len(args):
            chosen = args[i + 1]
        elif arg.startswith("--config="):
            chosen = arg.split("=", 1)[1]
    return chosen, off


class ConfigCommand(click.Command):
    """`check`, with its defaults taken from the settings file before the command line is parsed."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if any(a in ("--help", "-h") for a in args):  # the help never depends on a file
            return super().parse_args(ctx, args)
        chosen, off = _chosen_file(args)
        if chosen is not None and off:
            raise click.UsageError("--config and --no-config contradict each other", ctx)
        path = Path(chosen) if chosen else (None if off else find_config(Path.cwd()))
        if chosen and not os.path.lexists(chosen):
            raise InputError(f"--config {chosen}: no such file")
        if path is not None:
            defaults, severity = load_settings(path, self, ctx)
            ctx.default_map = {**(ctx.default_map or {}), **defaults}
            ctx.meta["dflash_check.severity"] = severity
            ctx.meta["dflash_check.config"] = str(path)
        return super().parse_args(ctx, args)
