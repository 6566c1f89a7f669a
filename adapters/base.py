"""The target adapter interface: the only way a DFlash runtime reaches a target model.

A DFlash draft has no embedding table and no LM head of its own, and it is conditioned on the
target's hidden states at a few decoder layers. So the runtime needs exactly these things from a
target, and nothing else:

    embed(ids)          rows of the target's input embedding table     [B, T] -> [B, T, H]
    head(hidden)        the target's output head (lm_head / tied)      [B, T, H] -> [B, T, V]
    layers              the decoder layers; index i == z-lab target layer id i
    new_cache()         an empty KV cache for `forward`
    forward(...)        run the target, append to the cache, return logits + captured features
    cache_length(c)     how many positions the cache holds
    rollback(c, n)      make the cache hold exactly the first n positions (drop rejected tokens)
    rollback_kind       "crop" | "replay" | "none": how (and whether) rollback is exact

The interface is framework-neutral: arrays are whatever the framework uses (torch.Tensor for
`torch_default.py`, mx.array for `mlx_default.py`). Shapes use B (batch, always 1 in the
runtime), T (tokens in this call), H (hidden size), V (vocabulary), L (captured layers).

An adapter maps, it does not decide: no sampling, no acceptance logic, no verdicts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal, NamedTuple, Optional, Sequence

from dflash_compat.exceptions import RuntimeUnsupportedError

__all__ = ["RollbackKind", "ROLLBACK_KINDS", "TargetOutput", "TargetAdapter", "position_limit"]

# "crop":   the cache is a list of per-position entries (attention KV); cutting it is exact.
# "replay": the state is recurrent, but the adapter can rebuild it exactly (e.g. re-running the
#           accepted tokens through a GatedDeltaNet update, as the MLX reference does).
# "none":   rejected tokens would stay in the state: speculative decoding would be wrong, so the
#           runtime refuses such a target with RuntimeUnsupportedError.
RollbackKind = Literal["crop", "replay", "none"]
ROLLBACK_KINDS: tuple[str, ...] = ("crop", "replay", "none")


class TargetOutput(NamedTuple):
    """What one target forward returns."""

    logits: Any  # [B, T_kept, V]; T_kept = T, or the last `logits_to_keep` positions
    features: Any  # [B, T, L*H]: outputs of the captured decoder layers, concatenated; None if none captured


class TargetAdapter(ABC):
    """How a runtime reaches one target model. Subclass it per framework or per model layout.

    Context features: for target layer id i, the feature is the OUTPUT of decoder layer i
    (in Hugging Face terms `hidden_states[i + 1]`; `hidden_states[0]` is the embedding output).
    Adapters capture only the requested layers, so a long prompt never materialises every
    layer's hidden states.
    """

    #: Short name shown in reports (e.g. "torch-default", "mlx-default", "gpt2").
    name: str = "base"

    def __init__(self, model: Any) -> None:
        self.model = model

    # ---- the target's shape --------------------------------------------------------------

    @property
    @abstractmethod
    def layers(self) -> Sequence[Any]:
        """The decoder layers, in order. `layers[i]` produces the feature for target layer id i."""

    @property
    def num_layers(self) -> int:
        """Number of decoder layers (N); valid target layer ids are 0 .. N-2."""
        return len(self.layers)

    @property
    @abstractmethod
    def hidden_size(self) -> int:
        """Width H of the decoder's hidden states (the text model's, for a VLM)."""

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Rows of the input embedding table (the largest valid token id + 1)."""

    @property
    def max_positions(self) -> Optional[int]:
        """The most positions the target supports (max_position_embeddings, times a RoPE scaling
        factor), or None when unknown. The runtime refuses a prompt + max_new_tokens beyond it."""
        return None

    # ---- the modules the draft borrows ---------------------------------------------------

    @abstractmethod
    def embed(self, input_ids: Any) -> Any:
        """Rows of the input embedding table for `input_ids` [B, T] -> [B, T, H].

        Raw rows: no model-specific scaling (Gemma's sqrt(H) lives in its embedding module);
        the draft applies its own `input_embedding_scale`.
        """

    @abstractmethod
    def head(self, hidden: Any) -> Any:
        """The output head on final-normed hidden states [B, T, H] -> logits [B, T, V].

        Only the projection (lm_head, or the tied embedding): the target's own logit
        soft-capping is not applied; the draft applies its `final_logit_softcapping`.
        """

    # ---- running the target ----------------------------------------------------------------

    @abstractmethod
    def new_cache(self) -> Any:
        """A fresh, empty cache that `forward` appends to and `rollback` can cut."""

    def new_plain_cache(self) -> Any:
        """A fresh cache for decoding that never rolls back (the greedy baseline); by default
        `new_cache()`. An adapter may return a cheaper cache that `rollback` need not support."""
        return self.new_cache()

    @abstractmethod
    def forward(
        self,
        input_ids: Any,
        cache: Any,
        start: int,
        *,
        capture: Sequence[int] = (),
        logits_to_keep: int = 0,
    ) -> TargetOutput:
        """Run the target on `input_ids` [B, T] at positions start .. start+T-1.

        The cache must hold exactly `start` positions before the call and holds start+T after.
        `capture`: target layer ids whose outputs become `features` [B, T, len(capture)*H], in
        the order given. `logits_to_keep`: 0 keeps logits for all T positions, k > 0 only for the
        last k (a prefill needs just the last one).
        """

    @abstractmethod
    def cache_length(self, cache: Any) -> int:
        """How many positions the cache holds."""

    @abstractmethod
    def rollback(self, cache: Any, length: int) -> None:
        """Make the cache hold exactly its first `length` positions, as if the later tokens had
        never been seen. Only called with length <= cache_length(cache)."""

    @property
    @abstractmethod
    def rollback_kind(self) -> RollbackKind:
        """"crop", "replay" or "none" (see RollbackKind)."""

    @property
    def rollback_problem(self) -> Optional[str]:
        """Why rollback_kind is "none", in one sentence for the error message (None otherwise)."""
        return None

    def require_rollback(self) -> None:
        """Raise RuntimeUnsupportedError if this target's cache cannot be rolled back exactly."""
        if self.rollback_kind == "none":
            why = self.rollback_problem or "its cache cannot be rolled back"
            raise RuntimeUnsupportedError(
                f"target ({self.name} adapter): {why}; speculative decoding would keep rejected tokens "
                "in its state and produce wrong tokens, so the runtime refuses it"
            )


def position_limit(max_position_embeddings: Any, rope: Any = None) -> Optional[int]:
    """max_position_embeddings, raised to factor * original_max_position_embeddings where a RoPE
    scaling entry (rope_scaling / rope_parameters) extends the context; None when unknown."""
    if not isinstance(max_position_embeddings, int) or isinstance(max_position_embeddings, bool) \
            or max_position_embeddings <= 0:
        return None
    limit = max_position_embeddings
    if isinstance(rope, dict):
        factor = rope.get("factor")
        original = rope.get("original_max_position_embeddings") or max_position_embeddings
        if isinstance(factor, (int, float)) and factor > 1 and isinstance(original, int):
            limit = max(limit, int(factor * original))
    return limit

