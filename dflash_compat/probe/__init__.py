"""Deep inspection: facts from the target's module tree and the draft's weight headers.

`get_deep_inspector(framework)` returns the callable `check.run_check` runs after the config-level specs are
built; it fills the specs in place. torch / transformers / mlx are imported only inside it.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..engine import CheckOptions
from ..resolve import Resolved
from ..specs import DraftSpec, TargetSpec

__all__ = ["get_deep_inspector", "deep_inspect", "detect_framework"]

FRAMEWORKS = ("auto", "torch", "mlx")


def detect_framework(resolved: Resolved, target: TargetSpec) -> str:
    """"mlx" for mlx-lm checkpoints (an mlx `quantization` block, mlx-format weights, mlx-community), else "torch"."""
    from .mlx_tree import looks_like_mlx_model  # pure Python: imports no mlx

    return "mlx" if looks_like_mlx_model(resolved.folder, resolved.repo_id) else "torch"


def _inspect_target(framework: str, resolved: Resolved, target: TargetSpec, options: CheckOptions,
                    notes: list[str]) -> None:
    if framework == "auto":
        framework = detect_framework(resolved, target)
    if framework == "mlx":
        from .mlx_tree import inspect_mlx_target

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

    inspect_draft_weights(draft_resolved, draft, notes, token=options.token)
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
