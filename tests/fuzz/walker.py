"""Bad input by construction (issue #24): walk click's command tree and give every parameter of every
command the hostile values of its type, one parameter at a time, on a command line that is otherwise
valid and cheap.

Nothing here lists options: a parameter's values come from its click type (int, float, choice, path,
text, flag) and every file-like parameter (paths, texts, arguments such as TARGET) also gets the
hostile file corpus (a FIFO, a folder, a dangling symlink, a non-UTF-8 name, /dev/zero, an empty and a
binary file, JSON of the wrong type or 100,000 levels deep, model folders whose config.json or
tokenizer.json is one of those). A new option or command is walked the day it is added.

The contract for each run (tests/fuzz/runner.py runs it in this process through the console
script's `main`): exit 0, 1 or 2, never 3 (our own "internal error") and never a traceback; exit 2
is exactly one stderr line. A float option must refuse NaN and the infinities (exit 2).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import click

from .cases import ROOT

__all__ = ["Param", "Outcome", "walk", "values_for", "Corpus", "run_one", "judge", "sample", "KINDS"]

DEMO = ROOT / "examples" / "demo"
KINDS = ("int", "float", "choice", "path", "text", "flag")

NUMBERS = ("0", "-1", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
           "18446744073709551615", "18446744073709551616", "1" + "0" * 30, "-" + "9" * 40, "9" * 5000,
           "nan", "-nan", "inf", "-inf", "1e309", "-1e309", "1e-320", "-0.0", "0x10", "1_000", "\u0663",
           "\uff11", " 7", "")
NON_FINITE = ("nan", "inf", "-inf", "1e309", "-1e309")
TEXTS = ("", " ", "-", "--", "x", "\udcff", "\udced\udca0\udc80", "\ud800", "a\x00b", "a\nb", "a\rb",
         "\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "evil\u202egnp.exe", "\u2066x\u2069", "\u200e\u200f",
         "\u2028", "\ufeff", "x" * 100_000, "\u00e9" * 50, "org/name", "org/name@main", "a/b/c@" + "z" * 200,
         "../outside", "~nobody/x", "::error::x", "%0A", "[bold]b[/bold]", "1,,3", "\u0661,\u0662", "DF101",
         "null", "{}", "[]")


@dataclass(frozen=True)
class Param:
    command: tuple[str, ...]  # () for the group itself
    name: str
    flag: str  # the option string (--seed) or the argument's metavar (TARGET)
    kind: str
    positional: bool
    choices: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return " ".join([*self.command, self.flag])


def kind_of(param: click.Parameter) -> str:
    t = param.type
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return "flag"
    if isinstance(t, click.Choice):
        return "choice"
    if isinstance(t, (click.types.IntParamType, click.IntRange)):
        return "int"
    if isinstance(t, (click.types.FloatParamType, click.FloatRange)):
        return "float"
    if isinstance(t, (click.Path, click.File)):
        return "path"
    return "text"


def _real(cmd: click.Command) -> click.Command:
    load = getattr(cmd, "_load", None)  # cli._LazyCommand
    return load() if load is not None else cmd


def _skipped(p: click.Parameter) -> bool:
    """--help and --version: they print and exit before anything runs."""
    return p.name in ("help", "version") or "--help" in getattr(p, "opts", ()) or "--version" in getattr(p, "opts", ())


def walk(group: Optional[click.Group] = None) -> list[Param]:
    """Every parameter of every command under `group` (recursively, lazy commands loaded), `--help`
    and `--version` left out."""
    if group is None:
        from dflash_compat.cli.app import cli as group
    out: list[Param] = []

    def visit(cmd: click.Command, path: tuple[str, ...]) -> None:
        ctx = click.Context(cmd, info_name=path[-1] if path else "dflash-check")
        for p in cmd.get_params(ctx):
            if _skipped(p):
                continue
            positional = isinstance(p, click.Argument)
            flag = p.human_readable_name.upper() if positional else max(p.opts, key=len)
            choices = tuple(p.type.choices) if isinstance(p.type, click.Choice) else ()
            out.append(Param(path, p.name, flag, kind_of(p), positional, choices))
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.commands):
                visit(_real(cmd.commands[name]), (*path, name))

    visit(group, ())
    return out


class Corpus:
    """The hostile files, made once in `root`: name -> path (as a command-line string)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, str] = {}
        root.mkdir(parents=True, exist_ok=True)
        self._file("empty", b"")
        self._file("binary", bytes(random.Random(0).randrange(256) for _ in range(4096)))
        self._file("not-utf8", b"\xff\xfe\x00 not text \xed\xa0\x80")
        self._file("text-100k", b"x" * 100_000)
        for name, body in _JSON.items():
            self._file(f"json-{name}", body)
        self._file("jsonl-surrogate", b'{"text": "a \\ud800 b"}\n"\\udfff"\n{"prompt": "x\\ud800"}\n')
        fifo = root / "fifo"
        if hasattr(os, "mkfifo") and not fifo.exists():
            os.mkfifo(fifo)
        self.files["fifo"] = str(fifo)
        (root / "folder").mkdir(exist_ok=True)
        self.files["folder"] = str(root / "folder")
        dangling = root / "dangling"
        if not dangling.is_symlink():
            dangling.symlink_to(root / "nowhere")
        self.files["dangling-symlink"] = str(dangling)
        odd = os.path.join(os.fsencode(root), b"\xff\xfe-name.json")
        with open(odd, "wb") as fh:
            fh.write(b"{}")
        self.files["non-utf8-name"] = os.fsdecode(odd)
        self.files["dev-zero"] = "/dev/zero"
        self.files["missing"] = str(root / "missing" / "x")
        # model folders: a config.json or tokenizer.json that is each hostile JSON
        for name in ("number", "string", "null", "list", "deep-list", "deep-object", "empty-object"):
            folder = root / f"model-config-{name}"
            folder.mkdir(exist_ok=True)
            (folder / "config.json").write_bytes(_JSON[name])
            self.files[f"model-config-{name}"] = str(folder)
        for name in ("number", "null", "empty-object", "deep-list"):
            folder = root / f"model-tokenizer-{name}"
            if not folder.exists():
                shutil.copytree(DEMO / "target", folder)
            (folder / "tokenizer.json").write_bytes(_JSON[name])
            self.files[f"model-tokenizer-{name}"] = str(folder)

    def _file(self, name: str, body: bytes) -> None:
        path = self.root / name
        path.write_bytes(body)
        self.files[name] = str(path)


_JSON = {
    "number": b"42", "string": b'"hello"', "null": b"null", "list": b"[]", "empty-object": b"{}",
    "nan": b'{"a": NaN}', "huge-int": b'{"a": ' + b"9" * 5000 + b"}",
    "deep-list": b"[" * 100_000, "deep-object": b'{"a":' * 100_000, "truncated": b'{"a": [1, 2',
}


def values_for(param: Param, corpus: Corpus) -> list[tuple[str, Optional[str]]]:
    """(label, value) pairs for one parameter by its kind; a flag's value is None (the flag given)."""
    files = [(f"file:{k}", v) for k, v in corpus.files.items()]
    texts = [(f"text:{t[:12]!r}", t) for t in TEXTS]
    numbers = [(f"number:{n[:12]!r}", n) for n in NUMBERS]
    if param.kind == "flag":
        return [("flag", None)]
    if param.kind == "choice":
        return [(f"choice:{c}", c) for c in param.choices] + [("choice:bad", "NOPE"), ("choice:''", ""),
                                                               ("choice:\\udcff", "\udcff")]
    if param.kind in ("int", "float"):
        return numbers + texts[:8]
    if param.kind == "path":
        return files + texts
    return texts + files + numbers[:6]


def sample(values: list, param: Param, n: int, seed: int = 0) -> list:
    """`n` of `values`, the same ones on every run for this parameter (seeded by its name)."""
    if n >= len(values):
        return list(values)
    rng = random.Random(zlib.crc32(f"{seed}:{param.key}".encode()))
    return rng.sample(values, n)


# -------------------------------------------------------------------------------------------------
# the command line around the value: valid, and cheap (heavy commands end before loading a model)
# -------------------------------------------------------------------------------------------------

_TINY_TRAIN = ("--steps", "1", "--batch-size", "1", "--seq-len", "16", "--anchors", "2", "--warmup", "0",
               "--eval-every", "0", "--checkpoint-every", "0")


def _bases(corpus: Corpus, full: bool) -> dict[tuple[str, ...], dict[str, list[str]]]:
    """Known commands: parameter name -> its argv words (a positional's one word). In the CI mode the
    heavy commands get a draft that does not exist, so a valid value ends at the preflight in
    milliseconds; `full` gives them the real demo pair (and tiny sizes), so valid values run."""
    target, draft = str(DEMO / "target"), str(DEMO / "draft")
    heavy_draft = draft if full else str(corpus.root / "missing-draft")
    profile = corpus.root / "profile.json"
    if not profile.exists():
        profile.write_text('{"kind": "dflash-acceptance-profile", "source": "smoke", "engine": "torch", '
                           '"block_size": 4, "steps": 10, "per_position_acceptance": [0.9, 0.5, 0.2], '
                           '"mean_acceptance": 2.6, "convention": "c", "cost": null, "measured": null}')
    return {
        ("check",): {"target": [target], "draft": ["--draft", draft], "no_deep": ["--no-deep"],
                     "no_config": ["--no-config"]},
        ("serve",): {"target": [target], "draft": ["--draft", draft], "engine": ["--engine", "vllm"],
                     "no_deep": ["--no-deep"]},
        ("smoke",): {"target": [target], "draft": ["--draft", heavy_draft], "max_new_tokens": ["--max-new-tokens", "4"],
                     "prompt_ids": ["--prompt-ids", "5,6"]},
        ("train",): {"target": [target], "draft": ["--draft", heavy_draft], "data": ["--data", str(DEMO / "prompts.txt")],
                     "out": ["-o", "out"]},
        ("probe",): {"url": ["http://127.0.0.1:9"], "model": ["--model", "M"], "timeout": ["--timeout", "2"]},
        ("init-draft",): {"target": [target], "out": ["-o", "out"],
                          **({"weights": ["--weights", "random"], "layers": ["--layers", "1"]} if full else {})},
        ("convert",): {"draft": [draft], "to": ["--to", "speculators"], "output": ["-o", "out"]},
        ("recommend",): {"profile_path": ["--profile", str(profile)]},
        ("adapt",): {"target": [target]},
        ("rule",): {"code": ["DF101"]},
    }


def _neutral(param: Param) -> list[str]:
    """A valid-looking value for a required parameter of a command the bases do not know."""
    name = param.name.lower()
    if param.kind == "choice":
        value = param.choices[0]
    elif param.kind in ("int", "float"):
        value = "1"
    elif "draft" in name:
        value = str(DEMO / "draft")
    elif "out" in name:
        value = "out"
    elif param.kind == "path" or "target" in name or "model" in name or "folder" in name:
        value = str(DEMO / "target")
    else:
        value = "x"
    return [value] if param.positional else [param.flag, value]


def argv_for(param: Param, value: Optional[str], params: list[Param], corpus: Corpus, full: bool = False) -> list[str]:
    """The command line that gives `param` the `value` and every other required parameter its base."""
    bases = _bases(corpus, full)
    known = bases.get(param.command)
    words: dict[str, list[str]] = {}
    for other in params:
        if other.command != param.command or other.name == param.name:
            continue
        if known is not None and other.name in known:
            words[other.name] = known[other.name]
        elif _required(other):
            words[other.name] = _neutral(other)
    if param.command == ("train",) and full:
        words["_tiny"] = list(_TINY_TRAIN)
    if value is None:
        mine = [param.flag]
    else:
        mine = [value] if param.positional else [param.flag, value]
    positional = [p for p in params if p.command == param.command and p.positional]
    head: list[str] = []
    for p in positional:  # arguments in their declared order
        head += mine if p.name == param.name else words.pop(p.name, [])
    rest = [w for ws in words.values() for w in ws]
    if param.command == ():  # a global option goes before the command
        return [*mine, "rules"]
    return [*param.command, *head, *([] if param.positional else mine), *rest]


_REQUIRED: dict[str, bool] = {}


def _required(param: Param) -> bool:
    return _REQUIRED.get(param.key, False)


def mark_required(group: Optional[click.Group] = None) -> None:
    """Remember which parameters click requires (walk() keeps Param small and hashable)."""
    if group is None:
        from dflash_compat.cli.app import cli as group

    def visit(cmd: click.Command, path: tuple[str, ...]) -> None:
        for p in cmd.get_params(click.Context(cmd)):
            if _skipped(p):
                continue
            flag = p.human_readable_name.upper() if isinstance(p, click.Argument) else max(p.opts, key=len)
            _REQUIRED[" ".join([*path, flag])] = bool(p.required)
        if isinstance(cmd, click.Group):
            for name in cmd.commands:
                visit(_real(cmd.commands[name]), (*path, name))

    visit(group, ())


# -------------------------------------------------------------------------------------------------
# running and judging
# -------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    param: Param
    label: str
    argv: list[str]
    code: Optional[int]
    stdout: str
    stderr: str
    error: Optional[BaseException]
    seconds: float


def run_one(param: Param, label: str, argv: list[str], limit: float = 60.0) -> Outcome:
    """Run `dflash-check ARGV` in this process (the console script's own main), in a fresh working
    folder, offline, with a timer."""
    import time

    from .runner import _in_process, fuzz_env

    with tempfile.TemporaryDirectory(prefix="dflash-walk-", dir=_scratch()) as tmp:
        cwd = os.getcwd()
        start = time.monotonic()
        with fuzz_env(Path(tmp) / "hf-home"):
            os.chdir(tmp)
            try:
                code, stdout, stderr, error = _in_process(argv, limit)
            finally:
                os.chdir(cwd)
                signal.setitimer(signal.ITIMER_REAL, 0)
        return Outcome(param, label, argv, code, stdout, stderr, error, time.monotonic() - start)


def _scratch() -> Optional[str]:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def judge(out: Outcome) -> Optional[str]:
    """None when the run kept the contract, else what broke it."""
    if out.error is not None:
        return f"escaped: {type(out.error).__name__}: {str(out.error)[:200]}"
    if "Traceback (most recent call last)" in out.stdout + out.stderr:
        return "printed a traceback"
    if out.code == 3:
        return f"internal error (exit 3): {out.stderr.strip()[-300:]}"
    if out.code not in (0, 1, 2):
        return f"exit {out.code}"
    if out.code == 2:
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        if len(lines) != 1 or not lines[0].startswith("dflash-check: "):
            return f"exit 2 with {len(lines)} stderr lines: {out.stderr[:300]!r}"
    if out.param.kind == "float" and out.label.split(":", 1)[-1].strip("'") in NON_FINITE and out.code != 2:
        return f"a float option accepted {out.label} (exit {out.code}); use inputs.FiniteFloatRange"
    return None


def cases(params: list[Param], corpus: Corpus, per_param: Optional[int], seed: int = 0,
          full: bool = False) -> Iterator[tuple[Param, str, list[str]]]:
    """(param, label, argv) for each parameter's values (all, or a seeded sample of `per_param`); a float
    parameter's sample always includes one non-finite value (the policy judge() checks)."""
    for param in params:
        values = values_for(param, corpus)
        chosen = values if per_param is None else sample(values, param, per_param, seed)
        if param.kind == "float" and per_param is not None and not any(v in NON_FINITE for _, v in chosen):
            chosen = [*chosen, ("number:'nan'", "nan")]
        for label, value in chosen:
            yield param, label, argv_for(param, value, params, corpus, full)
