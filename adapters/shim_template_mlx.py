"""Template of the MLX adapter shim that `dflash-check adapt --framework mlx` writes (see adapters/shim.py).

This module is valid Python as it stands (a passthrough for a standard `model.*` mlx-lm layout).
The generator replaces exactly two things: this docstring, and the constants between the
`generated` markers, each value written with repr() and checked back with ast.literal_eval.
All other code is copied verbatim, so a generated file holds no code that came from its input.
Standalone on purpose: it needs mlx (and mlx-lm for make_cache), never dflash-compat.
"""

import mlx.nn as nn

# --- generated: begin ---
FRAMEWORK = "mlx"
MODEL_TYPE = None
ARCHITECTURE = None
PATHS = {"embed": "model.embed_tokens", "layers": "model.layers", "norm": "model.norm", "lm_head": "lm_head"}
# --- generated: end ---

__all__ = ["PATHS", "DFlashAdapted", "wrap"]

# Roles a model may leave empty (a tied model has no lm_head; some have no final norm).
_OPTIONAL = ("lm_head", "norm")


def _resolve(root, path):
    """Follow a dotted attribute path from `root`; None where the model leaves it empty."""
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _ModelView:
    """`adapted.model`: the standard names `model.embed_tokens`, `model.layers`, `model.norm`."""

    def __init__(self, adapted):
        self._adapted = adapted

    @property
    def embed_tokens(self):
        return self._adapted.embed_tokens

    @property
    def layers(self):
        return self._adapted.layers

    @property
    def norm(self):
        return self._adapted.norm


class DFlashAdapted(nn.Module):
    """The wrapped model: `embed_tokens`, `lm_head`, `layers` and `model.*` where the DFlash MLX
    loader looks for them, on top of the original mlx-lm model (kept at `.target`, unchanged;
    weights shared). Calls and other attributes (args, sanitize, ...) pass through to it."""

    def __init__(self, target):
        super().__init__()
        self.target = target
        missing = [r for r, p in PATHS.items() if r not in _OPTIONAL and _resolve(target, p) is None]
        if missing:
            raise AttributeError(
                f"{type(target).__name__} has no {', '.join(repr(PATHS[r]) for r in missing)} "
                f"(roles {', '.join(missing)}): this shim was generated for another layout; regenerate it "
                "with `dflash-check adapt --framework mlx`"
            )

    @property
    def embed_tokens(self):
        return _resolve(self.target, PATHS["embed"])

    @property
    def lm_head(self):
        head = _resolve(self.target, PATHS["lm_head"]) if "lm_head" in PATHS else None
        # No separate head: the embedding is tied to the output (mlx-lm's `as_linear`).
        return head if head is not None else self.embed_tokens.as_linear

    @property
    def layers(self):
        # The model's own list: replacing an entry (a capture hook) changes what the model runs.
        return _resolve(self.target, PATHS["layers"])

    @property
    def norm(self):
        return _resolve(self.target, PATHS["norm"]) if "norm" in PATHS else None

    @property
    def model(self):
        return _ModelView(self)

    def __call__(self, inputs, cache=None, **kwargs):
        return self.target(inputs, cache=cache, **kwargs)

    def make_cache(self):
        if hasattr(self.target, "make_cache"):
            return self.target.make_cache()
        from mlx_lm.models.cache import make_prompt_cache

        return make_prompt_cache(self.target)

    def __getattr__(self, name):
        # Own entries first (mlx keeps arrays, lists and modules set on a Module in its dict),
        # then the original model's attributes.
        if name in self:
            return self[name]
        if not name.startswith("__") and "target" in self:
            return getattr(self["target"], name)
        return super().__getattr__(name)


def wrap(model):
    """Wrap a loaded mlx-lm model: `model, tok = mlx_lm.load(path); adapted = wrap(model)`."""
    return model if isinstance(model, DFlashAdapted) else DFlashAdapted(model)
