"""`ModuleFacts`: the target's module tree as built without weights (transformers on the meta device,
or mlx-lm with lazy arrays), grouped by the probe step that finds them.

A group is None when its step did not run or failed (`ModuleFacts.fact_errors` says why). Fields
marked "transformers" or "mlx-lm" are found only in that framework's tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional

from dflash_compat.modelfacts.skipped import Skipped

__all__ = [
    "ArgAcceptance",
    "CacheFacts",
    "DeprecatedKwarg",
    "ForwardFacts",
    "LayerReturns",
    "MlxCache",
    "MlxFacts",
    "MlxPaths",
    "ModuleFacts",
    "ModulePaths",
    "Rollback",
    "Scaling",
]

Framework = Literal["torch", "mlx"]
Rollback = Literal["crop", "none", "replay"]
LayerReturn = Literal["tensor", "tuple"]
# How a forward takes one of the reference runtime's keyword arguments.
ArgAcceptance = Literal["explicit", "deprecated-alias", "kwargs", "kwargs-passthrough", "untyped-kwargs", "no"]


@dataclass(frozen=True)
class ModulePaths:
    """Where the embedding, output head, decoder layers and final norm live (dotted paths)."""

    embed: Optional[str] = None
    head: Optional[str] = None  # mlx-lm: `<embed>.as_linear` for a tied head
    layers: Optional[str] = None
    norm: Optional[str] = None
    tied: Optional[bool] = None  # the head reuses the embedding's weights
    embed_class: Optional[str] = None
    head_class: Optional[str] = None
    layers_len: Optional[int] = None  # decoder layers the tree builds
    layer_classes: tuple[str, ...] = ()
    # transformers: how each was found and what the fixed paths of older runtimes reach
    decoder: Optional[str] = None  # get_decoder()'s path ("" for the model itself)
    embed_via: Optional[str] = None  # get_input_embeddings / search
    head_via: Optional[str] = None  # lm_head / get_output_embeddings / search
    layers_via: Optional[str] = None  # get_decoder / search
    config_layers: Optional[int] = None  # the decoder depth the config gives
    embed_width: Optional[int] = None  # width of the embedding's output rows
    head_takes_hidden: Optional[bool] = None  # the head accepts hidden-size inputs
    has_model_embed_tokens: Optional[bool] = None
    has_lm_head_attr: Optional[bool] = None


@dataclass(frozen=True)
class Scaling:
    """What the forward multiplies the embedding output and the logits by (beyond the weights)."""

    embed_scaled: bool = False
    embed_scale: Optional[float] = None  # None while embed_scaled: scaled by an amount the tree does not show
    embed_scale_source: tuple[str, ...] = ()  # where the scale lives, e.g. "embedding.embed_scale"
    logit_softcap: Optional[float] = None  # transformers: tanh soft-cap of the logits
    logits_scaling: Optional[float] = None  # transformers: the logits are divided by this


@dataclass(frozen=True)
class DeprecatedKwarg:
    """A keyword alias transformers' `deprecate_kwarg` decorator still accepts."""

    new_name: str
    removed_in: str  # the version the message names ("" when it names none)
    removed: bool  # the message says the alias is already gone


@dataclass(frozen=True)
class ForwardFacts:
    """The target's forward signature, as far as the reference runtime's call needs it."""

    accepts: tuple[str, ...] = ()  # transformers: reference arguments it takes; mlx-lm: its call parameters
    # transformers only
    params: tuple[str, ...] = ()  # named parameters, then "**kwargs" when it has one
    how: Mapping[str, ArgAcceptance] = field(default_factory=dict)  # per reference argument
    deprecated_kwargs: Mapping[str, DeprecatedKwarg] = field(default_factory=dict)
    cache_arg: Optional[str] = None  # the parameter that takes the cache (cache, past_key_values, state, ...)
    output_class: Optional[str] = None
    output_fields: tuple[str, ...] = ()
    output_has_hidden_states: Optional[bool] = None
    output_has_logits: Optional[bool] = None


@dataclass(frozen=True)
class LayerReturns:
    """What a decoder layer's forward returns, read from its code (no compute)."""

    kind: Optional[LayerReturn] = None  # "tuple" when any layer class returns one
    by_class: Mapping[str, Optional[LayerReturn]] = field(default_factory=dict)


@dataclass(frozen=True)
class CacheFacts:
    """The cache the target builds, and whether cutting it back rolls rejected tokens out."""

    layers: Optional[tuple[str, ...]] = None  # one cache class name per layer
    rollback: Optional[Rollback] = None  # crop: cutting is exact; none: it is not; replay: recompute the state
    # transformers only
    cache_class: Optional[str] = None  # "model-managed" when the model keeps its own state object
    error: Optional[str] = None  # the cache class could not be built for this config
    non_croppable: tuple[int, ...] = ()  # layer indices whose state cropping cannot roll back
    sliding: tuple[int, ...] = ()
    conv_state: tuple[int, ...] = ()  # conv-only states, restored exactly by cropping with past recording
    past_recording: Optional[bool] = None  # the cache has activate_past_recording()
    sliding_window: Optional[int] = None
    # The model's own code keeps a history of its recurrent states for a crop to restore (it asks the cache
    # get_recurrent_states_to_keep(): transformers 5.25.0); None: not known (no recurrent layers, or 4.x/5.24)
    recurrent_history: Optional[bool] = None

    @property
    def model_managed(self) -> bool:
        return self.cache_class == "model-managed"


@dataclass(frozen=True)
class MlxCache:
    """One entry of mlx-lm's `make_cache()` plan."""

    kind: str
    trimmable: bool
    layer: Optional[int] = None  # None for the parts of a CacheList
    module: Optional[str] = None  # the recurrent module keeping a non-trimmable state
    window: Optional[int] = None  # RotatingKVCache
    keep: Optional[int] = None  # RotatingKVCache
    parts: Optional[tuple["MlxCache", ...]] = None  # CacheList


@dataclass(frozen=True)
class MlxPaths:
    """Where the DFlash MLX port's fixed attribute lists reach (None: nowhere)."""

    embed: Optional[str] = None
    head: Optional[str] = None
    layers: Optional[str] = None


@dataclass(frozen=True)
class MlxFacts:
    """What only an mlx-lm tree tells."""

    mlx_lm_version: Optional[str] = None
    model_type: Optional[str] = None
    supported: bool = True  # False: mlx-lm cannot build this config (`error` says why)
    error: Optional[str] = None
    module: Optional[str] = None
    quantization: Optional[Mapping[str, Any]] = None
    reference_paths: MlxPaths = field(default_factory=MlxPaths)
    embed_quantized: bool = False
    head_quantized: bool = False
    gdn_normalize_qk: Optional[bool] = None
    make_cache: bool = False
    caches: tuple[MlxCache, ...] = ()
    reference_rollback: Optional[Rollback] = None  # what the DFlash MLX port can do
    runtime_rollback: Optional[Rollback] = None  # what dflash-compat's MLX runtime can do
    weights_read: bool = False  # quantised modules were read from the weight headers


@dataclass(frozen=True)
class ModuleFacts:
    """The target's module tree, as built without weights by `framework`."""

    framework: Framework
    model_class: Optional[str] = None
    adapter: Optional[str] = None  # --adapter: the facts are those of the adapted model
    paths: Optional[ModulePaths] = None
    scaling: Optional[Scaling] = None
    forward: Optional[ForwardFacts] = None
    layer_returns: Optional[LayerReturns] = None
    cache: Optional[CacheFacts] = None
    fact_errors: Mapping[str, str] = field(default_factory=dict)  # probe step -> why it failed
    # the tree was built but could not be read (locating its modules failed): no module rule can judge it
    skipped: Optional[Skipped] = None
    notes: tuple[str, ...] = ()  # what a user may want to know about how the facts were gathered
    # transformers only
    transformers_version: Optional[str] = None
    auto_class: Optional[str] = None  # the Auto class (or architecture) the model was built with
    auto_map_not_imported: bool = False  # remote code not trusted: transformers' built-in class was used
    crop_semantics: Optional[str] = None  # how this transformers' DynamicCache.crop reads its argument
    # mlx-lm only
    mlx: Optional[MlxFacts] = None
