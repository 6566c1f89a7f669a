"""Which dotted attribute paths exist in the target's module tree, built without weights (transformers on
the meta device, or mlx-lm with lazy arrays): what `dflash-check adapt --map ROLE=PATH` is checked
against before a shim is written for a path the model does not have.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from dflash_compat.modelfacts import Skipped
from dflash_compat.resolve.refs import Resolved
from dflash_compat.specs import TargetSpec

__all__ = ["PathCheck", "check_paths"]


@dataclass(frozen=True)
class PathCheck:
    """The tree was built: each asked path that leads nowhere, with the closest paths that exist."""

    model_class: str
    missing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _follow(root: Any, path: str) -> Any:
    """`root.a.b` for "a.b", as the generated shim follows it (None where a step is missing or empty)."""
    obj = root
    for part in path.split("."):
        try:
            obj = getattr(obj, part, None)
        except Exception:  # noqa: BLE001 - a property that raises counts as absent
            return None
        if obj is None:
            return None
    return obj


def _closest(path: str, existing: Iterable[str], n: int = 3) -> tuple[str, ...]:
    """The `n` existing paths most like `path`; per-layer paths (`h.3.attn`) only when nothing else is close."""
    names = list(existing)
    shared = [p for p in names if not any(part.isdigit() for part in p.split("."))]
    return tuple(difflib.get_close_matches(path, shared, n=n, cutoff=0.4)
                 or difflib.get_close_matches(path, names, n=n, cutoff=0.0))


def _check(model: Any, model_class: str, paths: Sequence[str], existing: Iterable[str]) -> PathCheck:
    names = sorted(set(existing))
    missing = {p: _closest(p, names) for p in paths if _follow(model, p) is None}
    return PathCheck(model_class=model_class, missing=missing)


def _torch(resolved: Resolved, target: TargetSpec, paths: Sequence[str],
           trust_remote_code: bool) -> Union[PathCheck, Skipped]:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        return Skipped("torch-missing", f"{exc.name or 'torch'} is not installed", framework="torch")
    from dflash_compat.inspection.torch_build import build, is_native, quiet

    remote = target.needs_remote_code and trust_remote_code
    if target.needs_remote_code and not remote and not is_native(target):
        return Skipped("remote-code", "the target needs its repo's own code: rerun with --trust-remote-code",
                       framework="torch")
    with quiet():
        built = build(resolved, target, remote)
        if isinstance(built, Skipped):
            return built
        names = [name for name, _ in built.model.named_modules() if name]
        return _check(built.model, built.model_class, paths, names)


def _mlx(resolved: Resolved, paths: Sequence[str], trust_remote_code: bool) -> Union[PathCheck, Skipped]:
    from dflash_compat.exceptions import error_line
    from dflash_compat.inspection.mlx_build import build_mlx_model, buildable_config
    from dflash_compat.inspection.mlx_tree import _walk

    config = buildable_config(resolved)
    if isinstance(config, Skipped):
        return config
    try:
        model, _ = build_mlx_model(config, folder=Path(resolved.folder), trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - mlx-lm raises many kinds for configs it cannot build
        return Skipped("build-failed", f"mlx-lm cannot build it ({error_line(exc)})", framework="mlx")
    return _check(model, type(model).__name__, paths, (p for p, _ in _walk(model)))


def check_paths(resolved: Resolved, target: TargetSpec, framework: str, paths: Sequence[str],
                trust_remote_code: bool = False) -> Union[PathCheck, Skipped]:
    """Build the target's tree (`framework` torch or mlx) and look each of `paths` up in it; Skipped
    when the tree cannot be built (then the paths cannot be validated). The deep check's guards apply:
    sizes no real model has are refused before anything is imported (a build would take minutes and
    gigabytes), and what the framework prints or sys.exit()s is contained."""
    from dflash_compat.inspection.foreign import ForeignExit, contained
    from dflash_compat.quoting import quote_items
    from dflash_compat.specs.sizes import oversized

    too_big = oversized(target.raw)
    if too_big:
        return Skipped("oversized-config", f"the config gives {quote_items(too_big, raw=True)}, beyond any real "
                       "model; the module tree was not built", framework=framework)
    try:
        with contained("mlx-lm" if framework == "mlx" else "transformers"):
            if framework == "mlx":
                return _mlx(resolved, paths, trust_remote_code)
            return _torch(resolved, target, paths, trust_remote_code)
    except ForeignExit as exc:
        return Skipped("build-failed", str(exc), framework=framework)
