"""The MLX backend of `dflash-check smoke`: mlx-lm target + our MLX draft, same report as the torch backend."""

from __future__ import annotations

from typing import Callable

from dflash_compat.exceptions import InputError, MissingDependencyError

__all__ = ["run_mlx"]

_DTYPES = ("float32", "bfloat16", "float16")


def _mlx_device(device: str) -> str:
    import mlx.core as mx

    if device == "cuda":
        raise InputError("--device cuda is for --backend torch; MLX runs on its default device (Apple GPU, else CPU)")
    if device == "cpu":
        mx.set_default_device(mx.cpu)
    return "gpu" if mx.default_device() == mx.gpu else "cpu"


def run_mlx(req, step: Callable[[], None], total: Callable[[int], None], *, tokenize: Callable, run_prompts: Callable,
            make_run: Callable):
    """Load the target with mlx-lm and the draft with dflash_compat.runtime.mlx_draft, then run spec and
    baseline per prompt (the torch backend's protocol: a short warm-up first). `tokenize`, `run_prompts`
    and `make_run` are smoke.py's (`_tokenize`, `run_prompts`, `SmokeRun`), passed in by its caller so
    that this module does not import smoke.py back."""
    try:
        import mlx.core as mx
        import mlx_lm  # noqa: F401
    except ImportError:
        raise MissingDependencyError("the mlx backend needs mlx and mlx-lm: pip install 'dflash-compat[mlx]'") from None
    from dflash_compat.runtime import mlx_generate as rt
    from dflash_compat.runtime.checkpoints import target_folder
    device = _mlx_device(req.device)
    folder = target_folder(req.target, token=req.token, trust_remote_code=req.trust_remote_code)
    prompts = tokenize(folder, req.texts, req.target) + [list(p) for p in req.prompt_ids]
    dtype = getattr(mx, req.dtype) if req.dtype in _DTYPES else None  # auto: as stored
    target = rt.load_target(folder, dtype=dtype, trust_remote_code=req.trust_remote_code, adapter=req.adapter)
    # auto: the draft computes in the target's dtype (the scale dtype of a quantised target)
    draft = rt.load_draft(req.draft, dtype=dtype or target.dtype, token=req.token)
    dtype_name = str(dtype or target.dtype).rsplit(".", 1)[-1]
    bs, runs = run_prompts(rt, draft, target, prompts, req, step, total)
    return make_run("mlx", device, dtype_name, bs, runs)
