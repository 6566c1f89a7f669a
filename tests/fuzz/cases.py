"""A fuzz case as plain data, and the folder it becomes: a real config pair bent by a list of mutations.

A case names a base pair (real, full-size configs from tests/fixtures and examples/), the mutations
applied to each config (set / delete a key path, or replace the whole file's bytes), an optional
draft weights file (the base pair's own, or hostile bytes), an optional shard index and settings
file, and the command line. Being data, a case prints as its own reproducer and can be shrunk by
dropping its parts one at a time (benchmarks/fuzz_long.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Union

__all__ = ["ROOT", "PAIRS", "Case", "Op", "base_config", "apply_ops", "materialize", "shrink_candidates"]

ROOT = Path(__file__).resolve().parents[2]
# name -> folder holding target/ and draft/ (real published configs, full size)
PAIRS: dict[str, Path] = {
    **{p.name: p for p in sorted((ROOT / "tests" / "fixtures" / "pairs").iterdir()) if (p / "draft").is_dir()},
    "examples-qwen3-8b": ROOT / "examples" / "qwen3-8b",
    "examples-llama-with-qwen3-draft": ROOT / "examples" / "llama-with-qwen3-draft",
    "tiny-qwen3": ROOT / "examples" / "tiny-qwen3",
}
# the one pair with real weights (small enough to build and read in milliseconds)
TINY = "tiny-qwen3"
_TINY_TARGET_FILES = ("generation_config.json", "tokenizer_config.json", "tokenizer.json")

_MISSING = object()


@dataclass(frozen=True)
class Op:
    """One mutation of a JSON document: `set` path = value, `delete` path, or `raw`: the file's bytes."""

    kind: str  # "set" | "delete" | "raw"
    path: tuple[Union[str, int], ...] = ()
    value: Any = None

    def __repr__(self) -> str:  # short, so a reproducer reads on one screen
        return f"Op({self.kind!r}, {self.path!r}, {_short(self.value)})"

    def _repr_pretty_(self, printer, cycle) -> None:  # hypothesis prints falsifying examples with this
        printer.text(repr(self))


@dataclass(frozen=True)
class Case:
    """One fuzz case: what the folders hold and how dflash-check is called on them."""

    pair: str
    target_ops: tuple[Op, ...] = ()
    draft_ops: tuple[Op, ...] = ()
    weights: Optional[bytes] = None  # draft/model.safetensors; None: the pair's own (if any)
    index: Optional[bytes] = None  # draft/model.safetensors.index.json
    settings: Optional[bytes] = None  # dflash-check.toml in the case's root (found from the working folder)
    command: str = "check"  # "check" | "smoke"
    args: tuple[str, ...] = ()  # options after TARGET --draft DRAFT
    target_arg: str = "target"
    draft_arg: str = "draft"
    tags: tuple[str, ...] = field(default=(), compare=False)

    def __repr__(self) -> str:
        parts = [repr(self.pair)]
        for name in ("target_ops", "draft_ops", "weights", "index", "settings", "command", "args", "target_arg",
                     "draft_arg"):
            value = getattr(self, name)
            if value != _DEFAULTS[name]:
                parts.append(f"{name}={_short(value, 400) if isinstance(value, bytes) else repr(value)}")
        return f"Case({', '.join(parts)})"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))

    def argv(self) -> list[str]:
        head = [self.command] if self.command != "check" else ["check"]
        return [*head, self.target_arg, "--draft", self.draft_arg, *self.args]


_DEFAULTS = {"target_ops": (), "draft_ops": (), "weights": None, "index": None, "settings": None, "command": "check",
             "args": (), "target_arg": "target", "draft_arg": "draft"}


def _short(value: Any, limit: int = 160) -> str:
    """repr() of a value, cut in the middle when long (a 100,000-bracket file prints as its ends)."""
    shown = repr(value)
    if len(shown) <= limit:
        return shown
    return f"{shown[:limit // 2]}...<{len(shown)} chars>...{shown[-limit // 4:]}"


def base_config(pair: str, side: str) -> dict:
    return json.loads((PAIRS[pair] / side / "config.json").read_text(encoding="utf-8"))


def _container(doc: Any, path: tuple) -> Any:
    for key in path[:-1]:
        if isinstance(doc, dict) and isinstance(key, str):
            doc = doc.setdefault(key, {}) if key not in doc else doc[key]
        elif isinstance(doc, list) and isinstance(key, int) and -len(doc) <= key < len(doc):
            doc = doc[key]
        else:
            return _MISSING
    return doc


def apply_ops(doc: Any, ops: tuple[Op, ...]) -> Union[Any, bytes]:
    """The document after `ops` (a deep copy); bytes when a `raw` op replaced the whole file."""
    doc = json.loads(json.dumps(doc))
    for op in ops:
        if op.kind == "raw":
            return op.value
        if not op.path:
            doc = op.value if op.kind == "set" else {}
            continue
        box, key = _container(doc, op.path), op.path[-1]
        if isinstance(box, dict) and isinstance(key, str):
            if op.kind == "set":
                box[key] = op.value
            else:
                box.pop(key, None)
        elif isinstance(box, list) and isinstance(key, int) and -len(box) <= key < len(box):
            if op.kind == "set":
                box[key] = op.value
            else:
                del box[key]
    return doc


def _json_bytes(doc: Any) -> bytes:
    """JSON as a careless writer would produce it: NaN / Infinity literal, lone surrogates escaped."""
    if isinstance(doc, bytes):
        return doc
    try:
        return json.dumps(doc, indent=1).encode("utf-8")
    except (RecursionError, ValueError):  # a strategy built a value json.dumps cannot nest: write it flat
        return json.dumps(doc).encode("utf-8")


def materialize(case: Case, root: Path) -> Path:
    """Write the case's folders under `root` (target/, draft/, maybe dflash-check.toml); returns root."""
    for side, ops in (("target", case.target_ops), ("draft", case.draft_ops)):
        folder = root / side
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_bytes(_json_bytes(apply_ops(base_config(case.pair, side), ops)))
    src = PAIRS[case.pair]
    if case.pair == TINY:
        for name in _TINY_TARGET_FILES + ("model.safetensors",):
            if (src / "target" / name).is_file():
                (root / "target" / name).write_bytes((src / "target" / name).read_bytes())
    own = src / "draft" / "model.safetensors"
    if case.weights is not None:
        (root / "draft" / "model.safetensors").write_bytes(case.weights)
    elif own.is_file():
        (root / "draft" / "model.safetensors").write_bytes(own.read_bytes())
    if case.index is not None:
        (root / "draft" / "model.safetensors.index.json").write_bytes(case.index)
    if case.settings is not None:
        (root / "dflash-check.toml").write_bytes(case.settings)
    if "shim.py" in case.args:  # `--adapter shim.py`: a shim that does not even compile
        (root / "shim.py").write_text("def broken(:\n", encoding="utf-8")
    return root


def _simpler_args(args: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The option list without one option (with its value when the next word is not an option)."""
    out = []
    i = 0
    while i < len(args):
        j = i + 1
        if args[i].startswith("-") and j < len(args) and not args[j].startswith("--"):
            j += 1
        out.append(args[:i] + args[j:])
        i = j
    return out


def shrink_candidates(case: Case) -> list[Case]:
    """Smaller cases to try while the failure stays the same: one part dropped at a time."""
    out: list[Case] = []
    for name in ("target_ops", "draft_ops"):
        ops = getattr(case, name)
        out += [replace(case, **{name: ops[:i] + ops[i + 1:]}) for i in range(len(ops))]
    for name in ("weights", "index", "settings"):
        if getattr(case, name) is not None:
            out.append(replace(case, **{name: None}))
    out += [replace(case, args=a) for a in _simpler_args(case.args)]
    return out

