"""Deep inspection: facts from the target's module tree and the draft's weight headers.

Each probe returns typed facts (`dflash_compat.modelfacts`) or a `Skipped`; none writes into a spec,
prints, or judges. torch / transformers / mlx are imported only inside the probe that needs them.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from dflash_compat.deployment.options import CheckOptions
from dflash_compat.inspection.foreign import ForeignExit, contained
from dflash_compat.modelfacts import DraftWeights, ModuleFacts, Skipped
from dflash_compat.quoting import quote_items
from dflash_compat.resolve.refs import Resolved
from dflash_compat.specs import TargetSpec
from dflash_compat.specs.sizes import oversized

__all__ = ["FRAMEWORKS", "detect_framework", "inspect_draft", "inspect_target"]

FRAMEWORKS = ("auto", "torch", "mlx")


def detect_framework(resolved: Resolved) -> str:
    """"mlx" for mlx-lm checkpoints (an mlx `quantization` block, mlx-format weights, mlx-community), else "torch"."""
    from dflash_compat.inspection.mlx_build import looks_like_mlx_model  # pure Python: imports no mlx

    return "mlx" if looks_like_mlx_model(resolved.folder, resolved.repo_id) else "torch"


def inspect_target(resolved: Resolved, target: TargetSpec, options: CheckOptions,
                   framework: str = "auto") -> Union[ModuleFacts, Skipped]:
    """The target's module facts from transformers (torch) or mlx-lm; `auto` picks by the checkpoint."""
    if framework not in FRAMEWORKS:
        from dflash_compat.exceptions import InputError

        raise InputError(f"--framework {framework}: expected one of {', '.join(FRAMEWORKS)}")
    if framework == "auto":
        framework = detect_framework(resolved)
    too_big = oversized(target.raw)
    if too_big:  # a build would take minutes and gigabytes: refuse before importing anything
        return Skipped("oversized-config", f"the config gives {quote_items(too_big, raw=True)}, beyond any real "
                       "model; the module tree was not built", framework=framework)
    who = "mlx-lm" if framework == "mlx" else "transformers"
    try:
        with contained(who):  # what foreign code prints stays out of the report; sys.exit() is caught
            if framework == "mlx":
                from dflash_compat.inspection.mlx_tree import inspect_mlx_target

                return inspect_mlx_target(resolved, options)
            from dflash_compat.inspection.torch_meta import inspect_torch_target

            return inspect_torch_target(resolved, target, options)
    except ForeignExit as exc:
        return Skipped("inspection-failed", str(exc), framework=framework)


def inspect_draft(resolved: Resolved, token: Optional[str] = None, api: Any = None) -> Union[DraftWeights, Skipped]:
    """The draft's weight facts from its safetensors headers (local files, else the Hub's header API)."""
    from dflash_compat.inspection.weights import inspect_draft_weights

    return inspect_draft_weights(resolved, api=api, token=token)
