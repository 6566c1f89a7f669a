"""Deep inspection: facts from the target's module tree and the draft's weight headers.

`get_deep_inspector(framework)` returns the callable `check.run_check` runs after the config-level specs are
built; it fills the specs in place. torch / transformers / mlx are imported only inside it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Callable, Optional

from ..engine import CheckOptions
from ..resolve import Resolved
from ..specs import DraftSpec, TargetSpec

__all__ = ["get_deep_inspector", "deep_inspect", "detect_framework"]

FRAMEWORKS = ("auto", "torch", "mlx")


def _local_metadata_format(folder: Path) -> Optional[str]:
    """`__metadata__.format` of the first local safetensors file ("pt", "mlx", ...), reading the header only."""
    for path in sorted(folder.glob("*.safetensors"))[:1]:
        try:
            with open(path, "rb") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))
                if 0 < n <= 100_000_000:
                    meta = json.loads(fh.read(n)).get("__metadata__") or {}
                    return meta.get("format") if isinstance(meta, dict) else None
        except (OSError, struct.error, ValueError, AttributeError):
            return None
    return None


def detect_framework(resolved: Resolved, target: TargetSpec) -> str:
    """"mlx" for mlx-lm checkpoints (an mlx `quantization` block, mlx-format weights, mlx-community), else "torch"."""
    try:
        from .mlx_tree import looks_like_mlx_model
    except ImportError:
        looks_like_mlx_model = None
    if looks_like_mlx_model is not None:
        return "mlx" if looks_like_mlx_model(resolved.folder, resolved.repo_id) else "torch"
    if isinstance(target.raw.get("quantization"), dict) or _local_metadata_format(resolved.folder) == "mlx":
        return "mlx"
    return "torch"


def _inspect_target(framework: str, resolved: Resolved, target: TargetSpec, options: CheckOptions,
                    notes: list[str]) -> None:
    if framework == "auto":
        framework = detect_framework(resolved, target)
    if framework == "mlx":
        try:
            from .mlx_tree import inspect_mlx_target
        except ImportError as exc:
            target.deep = {"inspected": False, "framework": "mlx", "skipped": "mlx-inspector-missing",
                           "detail": f"the MLX module inspector is not available ({exc}); install dflash-compat[mlx]"}
            notes.append("module checks skipped: no MLX inspector")
            return
        from ..exceptions import MissingDependencyError

        try:
            inspect_mlx_target(resolved, target, options, notes)
        except MissingDependencyError as exc:
            target.deep = {"inspected": False, "framework": "mlx", "skipped": "mlx-inspector-missing", "detail": str(exc)}
            notes.append("module checks skipped: mlx is not installed")
        return
    from .torch_meta import inspect_torch_target

    inspect_torch_target(resolved, target, options, notes)


def deep_inspect(
    target_resolved: Resolved,
    target: TargetSpec,
    draft_resolved: Resolved,
    draft: DraftSpec,
    options: CheckOptions,
    notes: list[str],
    framework: str = "auto",
) -> None:
    """Fill the deep facts into both specs: the draft's weight headers (always), the target's module tree."""
    from .safetensors_header import inspect_draft_weights

    inspect_draft_weights(draft_resolved, draft, notes)
    _inspect_target(framework, target_resolved, target, options, notes)


def get_deep_inspector(framework: str = "auto") -> Optional[Callable]:
    """The inspector for `framework` (auto / torch / mlx). Nothing heavy is imported until it runs."""
    if framework not in FRAMEWORKS:
        from ..exceptions import InputError

        raise InputError(f"--framework {framework}: expected one of {', '.join(FRAMEWORKS)}")

    def deep(t_res: Resolved, target: TargetSpec, d_res: Resolved, draft: DraftSpec, options: CheckOptions,
             notes: list[str]) -> None:
        deep_inspect(t_res, target, d_res, draft, options, notes, framework=framework)

    return deep
