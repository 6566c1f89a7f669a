"""The target as a runtime drives it: the framework-neutral interface both runtimes' targets implement.

A DFlash draft has no embedding table and no LM head of its own, and it is conditioned on the
target's hidden states at a few decoder layers. So the decode loop needs exactly these things from
a target, and nothing else:

    embed(ids)          rows of the target's input embedding table     [B, T] -> [B, T, H]
    head(hidden)        the target's output head (lm_head / tied)      [B, T, H] -> [B, T, V]
    layers              the decoder layers; index i == z-lab target layer id i
    new_cache()         an empty cache for `forward`
    forward(...)        run the target, append to the cache, return logits + captured features
    cache_length(c)     how many positions the cache holds
    rollback(c, n)      make the cache hold exactly the first n positions (drop rejected tokens)
    rollback_kind       "crop" | "replay" | "none": how (and whether) rollback is exact

Where the pieces live in a given model is an adapter's business (`dflash_compat.adapters`: thin
property mappings chosen by model_type); how to run them is the framework's (`torch_target.py`,
`mlx_target.py`). Shapes: B (batch, always 1 here), T (tokens in this call), H (hidden size),
V (vocabulary), L (captured layers).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal, NamedTuple, Optional, Sequence

from dflash_compat.exceptions import RuntimeUnsupportedError

__all__ = ["RollbackKind", "ROLLBACK_KINDS", "TargetOutput", "Target", "position_limit"]

# "crop":   the cache is a list of per-position entries (attention KV); cutting it is exact.
# "replay": the state is recurrent, but the runtime can rebuild it exactly (e.g. re-running the
#           accepted tokens through a GatedDeltaNet update, as the MLX reference does).
# "none":   rejected tokens would stay in the state: speculative decoding would be wrong, so the
#           runtime refuses such a target with RuntimeUnsupportedError.
RollbackKind = Literal["crop", "replay", "none"]
ROLLBACK_KINDS: tuple[str, ...] = ("crop", "replay", "none")


class TargetOutput(NamedTuple):
    """What one target forward returns."""

    logits: Any  # [B, T_kept, V]; T_kept = T, or the last `logits_to_keep` positions
    features: Any  # [B, T, L*H]: outputs of the captured decoder layers, concatenated; None if none captured


class Target(ABC):
    """One target model as the runtime runs it: an adapter (where its pieces are) plus a framework's
    forward, cache and rollback. Context features: for target layer id i, the feature is the OUTPUT
    of decoder layer i (in Hugging Face terms `hidden_states[i + 1]`); only the requested layers are
    captured, so a long prompt never materialises every layer's hidden states."""

    #: The one-line refusal when the adapter finds no embedding or head ({model}: the model's class).
    no_pieces_message = "target ({model}): no input embedding or output head found; write an adapter for it"

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self.model = adapter.model
        self.name: str = adapter.name  # shown in messages: "torch-default", "gpt2", "shim:adapter.py", ...
        self._embedding, self._head = adapter.embed_tokens, adapter.lm_head
        if self._embedding is None or self._head is None:
            raise RuntimeUnsupportedError(self.no_pieces_message.format(model=type(self.model).__name__))
        self._layers = adapter.decoder_layers
        self._project_in, self._project_out = adapter.project_in, adapter.project_out
        self._kind: RollbackKind = "crop"
        self._problem: Optional[str] = None

    # ---- the target's shape --------------------------------------------------------------

    @property
    def layers(self) -> Sequence[Any]:
        """The decoder layers, in order. `layers[i]` produces the feature for target layer id i."""
        return self._layers

    @property
    def num_layers(self) -> int:
        """Number of decoder layers (N); valid target layer ids are 0 .. N-1."""
        return len(self.layers)

    @property
    @abstractmethod
    def hidden_size(self) -> int:
        """Width H of the decoder's hidden states (the text model's, for a VLM)."""

    @property
    def vocab_size(self) -> int:
        """Rows of the input embedding table (the largest valid token id + 1)."""
        return int(self._embedding.weight.shape[0])

    @property
    def max_positions(self) -> Optional[int]:
        """The most positions the target supports (max_position_embeddings, times a RoPE scaling
        factor), or None when unknown. The runtime refuses a prompt + max_new_tokens beyond it."""
        return None

    # ---- the modules the draft borrows ---------------------------------------------------

    @abstractmethod
    def embedding_rows(self, input_ids: Any) -> Any:
        """Raw rows of the input embedding table for `input_ids` [B, T] -> [B, T, E]. No
        model-specific scaling: the draft applies its own `input_embedding_scale`."""

    def embed(self, input_ids: Any) -> Any:
        """The block's embedding as the draft sees it: [B, T] -> [B, T, H] (the raw rows, widened by
        the adapter's `project_in` where the embedding is narrower than the decoder)."""
        rows = self.embedding_rows(input_ids)
        return rows if self._project_in is None else self._project_in(rows)

    def head(self, hidden: Any) -> Any:
        """The output head on final-normed hidden states [B, T, H] -> logits [B, T, V] (after the
        adapter's `project_out`, if any); the target's own logit soft-capping is not applied."""
        return self._head(hidden if self._project_out is None else self._project_out(hidden))

    # ---- running the target ----------------------------------------------------------------

    @abstractmethod
    def new_cache(self, static_length: Optional[int] = None) -> Any:
        """A fresh, empty cache that `forward` appends to and `rollback` can cut. `static_length`: one
        allocated once for that many positions (fixed attention shapes), where the framework has one."""

    def new_plain_cache(self, static_length: Optional[int] = None) -> Any:
        """A fresh cache for decoding that never rolls back (the greedy baseline)."""
        return self.new_cache() if static_length is None else self.new_cache(static_length=static_length)

    @abstractmethod
    def forward(self, input_ids: Any, cache: Any, start: int, *, capture: Sequence[int] = (),
                logits_to_keep: int = 0) -> TargetOutput:
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
    def rollback_kind(self) -> RollbackKind:
        """"crop", "replay" or "none" (see RollbackKind)."""
        return self._kind

    @property
    def rollback_problem(self) -> Optional[str]:
        """Why rollback_kind is "none", in one sentence for the error message (None otherwise)."""
        return self._problem

    def require_rollback(self) -> None:
        """Raise RuntimeUnsupportedError if this target's cache cannot be rolled back exactly."""
        if self.rollback_kind == "none":
            why = self.rollback_problem or "its cache cannot be rolled back"
            raise RuntimeUnsupportedError(
                f"target ({self.name} adapter): {why}; speculative decoding would keep rejected tokens "
                "in its state and produce wrong tokens, so the runtime refuses it"
            )

    # ---- checks both frameworks' forward and rollback make ------------------------------------

    def check_capture(self, capture: Sequence[int]) -> None:
        for i in capture:
            if not 0 <= i < len(self.layers):
                raise RuntimeUnsupportedError(
                    f"target layer id {i} is out of range: the target has {len(self.layers)} decoder layers"
                )

    def prefill_chunks(self, input_ids: Any, cache: Any, capture: Sequence[int], step: Optional[int],
                       between: Any = None) -> tuple[TargetOutput, list[Any]]:
        """Forward a prompt [1, n] in chunks of `step` positions (None: one forward): the last chunk's
        output (logits of the last position [1, 1, V]) and each chunk's features, in order.
        `between(features so far)` runs after every chunk but the last (MLX evaluates there)."""
        n = input_ids.shape[1]
        step = step or n
        feats, out = [], None
        for begin in range(0, n, step):
            out = self.forward(input_ids[:, begin:begin + step], cache, begin, capture=capture, logits_to_keep=1)
            feats.append(out.features)
            if between is not None and begin + step < n:
                between(feats)
        return out, feats

    @staticmethod
    def positions_to_drop(held: int, length: int) -> int:
        if length > held:
            raise ValueError(f"cannot roll a cache of {held} positions forward to {length}")
        return held - length


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
        if isinstance(factor, (int, float)) and 1 < factor < float("inf") and isinstance(original, int):
            limit = max(limit, int(factor * original))
    return limit
