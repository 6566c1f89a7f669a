"""Deep inspection: facts from the target's module tree and the draft's weight headers.

Each probe returns typed facts (`dflash_compat.facts`) or a `Skipped`; none writes into a spec,
prints, or judges. torch / transformers / mlx are imported only inside the probe that needs them.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from ..facts import DraftWeights, ModuleFacts, Skipped
from ..options import CheckOptions
from ..resolve import Resolved
from ..specs import TargetSpec

__all__ = ["FRAMEWORKS", "detect_framework", "inspect_draft", "inspect_target"]

FRAMEWORKS = ("auto", "torch", "mlx")


def detect_framework(resolved: Resolved) -> str:
    """"mlx" for mlx-lm checkpoints (an mlx `quantization` block, mlx-format weights, mlx-community), else "torch"."""
    from .mlx_build import looks_like_mlx_model  # pure Python: imports no mlx

    return "mlx" if looks_like_mlx_model(resolved.folder, resolved.repo_id) else "torch"


def inspect_target(resolved: Resolved, target: TargetSpec, options: CheckOptions,
                   framework: str = "auto") -> Union[ModuleFacts, Skipped]:
    """The target's module facts from transformers (torch) or mlx-lm; `auto` picks by the checkpoint."""
    if framework not in FRAMEWORKS:
        from ..exceptions import InputError

        raise InputError(f"--framework {framework}: expected one of {', '.join(FRAMEWORKS)}")
    if framework == "auto":
        framework = detect_framework(resolved)
    if framework == "mlx":
        from .mlx_tree import inspect_mlx_target

        return inspect_mlx_target(resolved, options)
    from .torch_meta import inspect_torch_target

    return inspect_torch_target(resolved, target, options)


def inspect_draft(resolved: Resolved, token: Optional[str] = None, api: Any = None) -> Union[DraftWeights, Skipped]:
    """The draft's weight facts from its safetensors headers (local files, else the Hub's header API)."""
    from .safetensors_header import inspect_draft_weights

    return inspect_draft_weights(resolved, api=api, token=token)
