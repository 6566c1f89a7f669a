"""The adapter-shim generator behind `dflash-check adapt`: a validated plan in, checked Python source out.

A shim is a standalone module that wraps a user's model and exposes what DFlash engines reach for
(`get_input_embeddings()`, `lm_head`, `model.embed_tokens`, `model.layers`, a forward with the
cache, `logits_to_keep` and hidden states). It is rendered from a template that is itself valid
Python (`shim_template_torch.py`, `shim_template_mlx.py`): only the docstring and one block of
constants change, every value goes through repr(), and the result is compiled and compared back
with the template (same code, same constants) before anyone can write it. Input here is hostile
by assumption: paths and role names come from config files and the command line.
"""

from __future__ import annotations

import ast
import keyword
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from dflash_compat.exceptions import InputError, one_line

__all__ = [
    "ROLES",
    "REQUIRED_ROLES",
    "ShimPlan",
    "validate_path",
    "validate_role",
    "parse_map_options",
    "load_map_file",
    "render_shim",
    "write_shim",
]

# role -> what it is. Only these roles exist; anything else in --map is refused.
ROLES: dict[str, str] = {
    "embed": "the input embedding table (token ids -> vectors)",
    "embed_proj": "a projection applied after the embedding (OPT's project_in)",
    "layers": "the list of decoder layers",
    "norm": "the final norm after the last decoder layer",
    "head_proj": "a projection applied before the output head (OPT's project_out)",
    "lm_head": "the output head (hidden -> logits); omit when tied to the embedding",
}
REQUIRED_ROLES = ("embed", "layers")
FRAMEWORKS = ("torch", "mlx")
_ROLE_ORDER = tuple(ROLES)
_TORCH_ONLY_ROLES = ("embed_proj", "head_proj")

MAX_PATH_CHARS = 200
MAX_PATH_SEGMENTS = 16
# Names that end up in the docstring are plain words: no quotes, no backslashes, no newlines.
_SAFE_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")
_BEGIN = "# --- generated: begin ---"
_END = "# --- generated: end ---"
_TEMPLATES = {"torch": "shim_template_torch.py", "mlx": "shim_template_mlx.py"}


def validate_path(path: Any, what: str = "path") -> str:
    """A dotted attribute path (`transformer.wte`): ASCII identifiers, no keywords, no `__` names."""
    if not isinstance(path, str):
        raise InputError(f"{what}: expected a dotted attribute path, got {type(path).__name__}")
    shown = _show(path)
    if not path or len(path) > MAX_PATH_CHARS:
        raise InputError(f"{what}: {shown} must be 1-{MAX_PATH_CHARS} characters")
    parts = path.split(".")
    if len(parts) > MAX_PATH_SEGMENTS:
        raise InputError(f"{what}: {shown} has more than {MAX_PATH_SEGMENTS} segments")
    for part in parts:
        if not (part.isascii() and part.isidentifier()):
            raise InputError(f"{what}: {shown} is not a dotted path of Python identifiers (e.g. transformer.wte)")
        if keyword.iskeyword(part):
            raise InputError(f"{what}: {shown} uses the Python keyword {part!r}")
        if part.startswith("__"):
            raise InputError(f"{what}: {shown} reaches a dunder or name-mangled attribute ({part!r}); refused")
    return path


def validate_role(role: Any) -> str:
    if not isinstance(role, str) or role not in ROLES:
        raise InputError(f"unknown role {_show(role)}; roles are: {', '.join(ROLES)}")
    return role


def _show(value: Any) -> str:
    """A value for an error message: repr'd (so newlines stay on one line) and shortened."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _safe_word(value: Optional[str], what: str) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str) or not _SAFE_WORD.match(value):
        raise InputError(f"{what} {_show(value)} is not a plain name (letters, digits, _ . -); refusing to generate")
    return value


@dataclass(frozen=True)
class ShimPlan:
    """What a shim maps: role -> dotted path in the user's model, plus facts for its docstring."""

    framework: str
    paths: Mapping[str, str]
    model_type: Optional[str] = None
    architecture: Optional[str] = None
    # Short notes for the docstring ("GPT-2 keeps its layers at transformer.h"); plain words only.
    source: str = "--map"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def checked(self) -> "ShimPlan":
        """The plan with every field validated; raises InputError (one line) otherwise."""
        if self.framework not in FRAMEWORKS:
            raise InputError(f"framework {_show(self.framework)}: choose torch or mlx")
        if not isinstance(self.paths, Mapping):
            raise InputError("paths: expected a mapping of role -> dotted path")
        paths: dict[str, str] = {}
        for role, path in self.paths.items():
            validate_role(role)
            if self.framework == "mlx" and role in _TORCH_ONLY_ROLES:
                raise InputError(f"role {role!r} exists for PyTorch shims only")
            paths[role] = validate_path(path, f"role {role}")
        missing = [r for r in REQUIRED_ROLES if r not in paths]
        if missing:
            raise InputError(
                f"no path for {', '.join(missing)}: pass --map {missing[0]}=PATH (e.g. --map embed=transformer.wte)"
            )
        arch = self.architecture
        if arch is not None and not (isinstance(arch, str) and arch.isascii() and arch.isidentifier()
                                     and not keyword.iskeyword(arch) and not arch.startswith("_")):
            raise InputError(f"architecture {_show(arch)} is not a Python class name; refusing to generate")
        notes = tuple(self.notes)
        for note in notes:
            if not isinstance(note, str) or not _safe_text(note):
                raise InputError(f"note {_show(note)} is not plain text")
        if not _safe_text(self.source):
            raise InputError(f"source {_show(self.source)} is not plain text")
        ordered = {r: paths[r] for r in _ROLE_ORDER if r in paths}
        return ShimPlan(self.framework, ordered, _safe_word(self.model_type, "model_type"), arch,
                        self.source, notes)


def _safe_text(text: Any) -> bool:
    # Docstring text: printable ASCII without quotes or backslashes, so it can never close or
    # escape the triple-quoted string it lives in.
    return isinstance(text, str) and len(text) <= 300 and all(" " <= c <= "~" and c not in "\"\\'" for c in text)


# ---- parsing --map / --map-file ------------------------------------------------------------


def parse_map_options(values: "tuple[str, ...] | list[str]") -> dict[str, str]:
    """`--map role=path` values -> {role: path}; a role given twice is an error."""
    out: dict[str, str] = {}
    for value in values:
        role, sep, path = value.partition("=")
        role, path = role.strip(), path.strip()
        if not sep:
            raise InputError(f"--map {_show(value)}: expected ROLE=PATH (e.g. embed=transformer.wte)")
        validate_role(role)
        if role in out:
            raise InputError(f"--map {role}: given twice")
        out[role] = validate_path(path, f"--map {role}")
    return out


_MAX_MAP_BYTES = 1_000_000  # a role map is a few lines


def load_map_file(path: "str | os.PathLike[str]") -> dict[str, str]:
    """Read {role: path} from a JSON or TOML file (a top-level table, or one under `map`); a bounded read
    of a regular file (never blocks on a FIFO, never reads /dev/zero without end)."""
    from dflash_compat.files.safe_read import parse_json, read_bytes

    p = Path(path)
    if p.suffix.lower() not in (".toml", ".json"):
        raise InputError(f"--map-file {p}: use a .json or .toml file")
    data_bytes = read_bytes(p, _MAX_MAP_BYTES, what=f"--map-file {p}")
    if p.suffix.lower() == ".toml":
        try:
            import tomllib  # Python 3.11+
        except ImportError:  # pragma: no cover - Python 3.10
            raise InputError(f"--map-file {p}: TOML needs Python 3.11 or newer; use a .json file") from None
        try:
            data = tomllib.loads(data_bytes.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InputError(f"--map-file {p}: invalid TOML ({one_line(exc)})") from None
        except RecursionError:
            raise InputError(f"--map-file {p}: invalid TOML (nested too deeply)") from None
    else:
        try:
            text = data_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"--map-file {p}: not UTF-8 text") from None
        data = parse_json(text, what=f"--map-file {p}")
    if isinstance(data, dict) and isinstance(data.get("map"), dict):
        data = data["map"]
    if not isinstance(data, dict):
        raise InputError(f"--map-file {p}: expected a table of role = \"path\"")
    out: dict[str, str] = {}
    for role, value in data.items():
        validate_role(role)
        out[role] = validate_path(value, f"--map-file {p.name}: {role}")
    return out


# ---- rendering -----------------------------------------------------------------------------


def _template(framework: str) -> str:
    return (Path(__file__).with_name(_TEMPLATES[framework])).read_text(encoding="utf-8")


def _constants(plan: ShimPlan) -> dict[str, Any]:
    return {
        "FRAMEWORK": plan.framework,
        "MODEL_TYPE": plan.model_type,
        "ARCHITECTURE": plan.architecture,
        "PATHS": dict(plan.paths),
    }


def _docstring(plan: ShimPlan) -> str:
    what = plan.model_type or "this model"
    width = max(len(r) for r in plan.paths)
    lines = [
        f"DFlash adapter shim for {what} ({plan.framework}), generated by `dflash-check adapt`.",
        "",
        "What it maps (role -> where it lives in the original model):",
        "",
        *(f"    {role.ljust(width)}  -> {path}" for role, path in plan.paths.items()),
        "",
    ]
    if plan.framework == "torch":
        lines += [
            "Why: DFlash engines and the reference runtime reach for the standard names:",
            "get_input_embeddings(), lm_head / get_output_embeddings(), model.embed_tokens,",
            "model.layers, and a forward that takes position_ids, the cache, logits_to_keep and",
            "output_hidden_states and returns hidden states. The wrapper adds those names",
            "on top of the layout of this model.",
        ]
    else:
        lines += [
            "Why: the DFlash MLX loader looks for embed_tokens at embed_tokens, model.embed_tokens",
            "or language_model.model.embed_tokens, the head at lm_head (else the tied embedding),",
            "and the layers at model.layers, language_model.layers or layers. The wrapper adds",
            "those names on top of the layout of this model.",
        ]
    if plan.notes:
        lines += ["", *(f"- {n}" for n in plan.notes)]
    lines += ["", f"Paths from: {plan.source}.", ""]
    if plan.framework == "torch":
        arch = plan.architecture or "AutoModelForCausalLM"
        if plan.architecture is None:
            lines += [
                "ARCHITECTURE: unknown (`architectures` in config.json names no transformers class),",
                "so from_pretrained() loads AutoModelForCausalLM and register() is unavailable.",
                "",
            ]
        lines += [
            "Use it:",
            "",
            "    import adapter  # this file",
            f"    from transformers import {arch}",
            f"    model = adapter.wrap({arch}.from_pretrained(PATH))",
            "",
            "    # or let AutoModelForCausalLM return the wrapped model (this process only):",
            "    adapter.register()",
            "",
            "    # check and smoke-test the adapted model:",
            "    dflash-check TARGET --draft DRAFT --adapter adapter.py",
            "    dflash-check smoke TARGET --draft DRAFT --adapter adapter.py",
            "",
            "The original model stays at `.target` with its weights shared; anything the",
            "wrapper does not define (config, generate, to, ...) passes through to it.",
        ]
    else:
        lines += [
            "Use it:",
            "",
            "    import adapter  # this file",
            "    import mlx_lm",
            "    model, tokenizer = mlx_lm.load(PATH)",
            "    model = adapter.wrap(model)",
            "",
            "    dflash-check smoke TARGET --draft DRAFT --framework mlx --adapter adapter.py",
            "",
            "The original model stays at `.target` with its weights shared; calls and other",
            "attributes pass through to it.",
        ]
    return "\n".join(lines)


def render_shim(plan: ShimPlan) -> str:
    """The shim's source for a plan. Validates the plan, then proves the result is the template
    with only the docstring and the constants changed; raises InputError when the plan is bad."""
    plan = plan.checked()
    template = _template(plan.framework)
    first = ast.parse(template).body[0]
    lines = template.splitlines(keepends=True)
    after_doc = "".join(lines[first.end_lineno:])  # the template's own docstring is dropped
    head, sep, rest = after_doc.partition(_BEGIN)
    body, sep2, tail = rest.partition(_END)
    if not (sep and sep2 and isinstance(first, ast.Expr) and first.lineno == 1):
        raise RuntimeError("shim template markers are missing")  # our bug, not the user's
    doc = _docstring(plan)
    if not all(_safe_text(line) for line in doc.split("\n")):
        raise InputError("refusing to generate: the docstring would contain unsafe characters")
    consts = _constants(plan)
    block = "".join(f"{name} = {value!r}\n" for name, value in consts.items())
    source = '"""' + doc + '"""\n' + head + _BEGIN + "\n" + block + _END + tail
    _verify(source, template, doc, consts)
    return source


def _verify(source: str, template: str, doc: str, consts: dict[str, Any]) -> None:
    """Compile the source and prove: same docstring as intended, the constants block holds only
    literals equal to the plan, and every other statement is the template's, node for node."""
    code = compile(source, "<dflash-adapter>", "exec", dont_inherit=True)
    del code
    tree, ref = ast.parse(source), ast.parse(template)
    if ast.get_docstring(tree, clean=False) != doc:
        raise RuntimeError("generated shim: docstring mismatch")
    got = _split_constants(tree)
    want = _split_constants(ref)
    if set(got[1]) != set(consts) or set(want[1]) != set(consts):
        raise RuntimeError("generated shim: constants block mismatch")
    for name, node in got[1].items():
        if ast.literal_eval(node) != consts[name]:
            raise RuntimeError(f"generated shim: constant {name} does not round-trip")
    if [ast.dump(n) for n in got[0]] != [ast.dump(n) for n in want[0]]:
        raise RuntimeError("generated shim: code differs from the template")


def _split_constants(tree: ast.Module) -> tuple[list[ast.stmt], dict[str, ast.expr]]:
    """(statements other than the docstring and the constants, {constant name: value node})."""
    consts: dict[str, ast.expr] = {}
    others: list[ast.stmt] = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("FRAMEWORK", "MODEL_TYPE", "ARCHITECTURE", "PATHS")):
            consts[node.targets[0].id] = node.value
            continue
        others.append(node)
    return others, consts


SHIM_MARK = b"generated by `dflash-check adapt`"


def looks_like_shim(head: bytes) -> bool:
    """Whether a file's first bytes are a shim this tool wrote (its module docstring says so), so that
    `adapt -o FILE` may replace its own previous output without --force."""
    return head.startswith(b'"""') and SHIM_MARK in head[:400]


def write_shim(source: str, out: "str | os.PathLike[str]", force: bool = False,
               protected: "tuple[Path, ...]" = ()) -> Path:
    """Write the shim to `out` through safe_write (atomically, never over an existing file or through a
    symlink unless `force`, never into a `protected` model folder); returns the path."""
    from dflash_compat.files.safe_write import write_output

    path = Path(out)
    if path.is_dir():
        raise InputError(f"-o {path}: is a folder; pass a file name such as {path / 'adapter.py'}")
    if path.suffix != ".py":
        raise InputError(f"-o {path}: the shim is a Python module; use a name ending in .py")
    compile(source, str(path), "exec", dont_inherit=True)
    return write_output(path, source, force=force, option="-o", is_ours=looks_like_shim, protected=protected)
