"""Template of the PyTorch adapter shim that `dflash-check adapt` writes (see adapters/shim.py).

This module is valid Python as it stands (a passthrough for a standard `model.*` layout). The
generator replaces exactly two things: this docstring, and the constants between the
`generated` markers, each value written with repr() and checked back with ast.literal_eval.
All other code is copied verbatim, so a generated file holds no code that came from its input.
Standalone on purpose: it needs torch (and transformers for from_pretrained/register), never
dflash-compat.
"""

import inspect

from torch import nn

# --- generated: begin ---
FRAMEWORK = "torch"
MODEL_TYPE = None
ARCHITECTURE = None
PATHS = {"embed": "model.embed_tokens", "layers": "model.layers", "norm": "model.norm", "lm_head": "lm_head"}
# --- generated: end ---

__all__ = ["PATHS", "DFlashAdapted", "wrap", "register"]

# Roles a model may leave empty (OPT sets project_in to None when no projection is needed; a
# missing lm_head falls back to get_output_embeddings(), e.g. GPT-NeoX `embed_out` in 4.x).
_OPTIONAL = ("embed_proj", "head_proj", "norm", "lm_head")


def _resolve(root, path):
    """Follow a dotted attribute path from `root`; None where the model leaves it empty."""
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _ProjectedEmbedding(nn.Module):
    """embed then project (OPT's embed_tokens -> project_in): ids [B, T] -> [B, T, H]."""

    def __init__(self, embed, proj):
        super().__init__()
        self.embed, self.proj = embed, proj

    def forward(self, input_ids):
        return self.proj(self.embed(input_ids))

    @property
    def weight(self):
        # The folded table [V, H] for code that reads `.weight` (F.embedding(ids, emb.weight)):
        # proj(E)[ids] == proj(E[ids]) because the projection acts row by row.
        return self.proj(self.embed.weight)


class _ProjectedHead(nn.Module):
    """project then head (OPT's project_out -> lm_head): hidden [B, T, H] -> logits [B, T, V]."""

    def __init__(self, proj, head):
        super().__init__()
        self.proj, self.head = proj, head

    def forward(self, hidden):
        return self.head(self.proj(hidden))

    @property
    def weight(self):
        # [V, d] @ [d, H] -> [V, H]; exact only without biases.
        if getattr(self.proj, "bias", None) is not None or getattr(self.head, "bias", None) is not None:
            raise AttributeError("the projected head has biases: call the module instead of reading .weight")
        return self.head.weight @ self.proj.weight


class _ModelView(nn.Module):
    """`adapted.model`: the standard names `model.embed_tokens`, `model.layers`, `model.norm`.
    A module (so `get_submodule("model.embed_tokens")` works) that owns nothing: it is built on
    each access and never registered, so no weight appears twice in the wrapper's tree."""

    def __init__(self, adapted):
        super().__init__()
        object.__setattr__(self, "_adapted", adapted)

    @property
    def embed_tokens(self):
        return self._adapted.get_input_embeddings()

    @property
    def layers(self):
        return self._adapted.layers

    @property
    def norm(self):
        return self._adapted.norm


class DFlashAdapted(nn.Module):
    """The wrapped model: the DFlash target contract on top of the original module tree.

    The original model stays at `.target`, unchanged; its weights are shared, not copied.
    Attributes the wrapper does not define (config, generate, device, ...) pass through to it.
    """

    def __init__(self, target):
        super().__init__()
        self.target = target
        missing = [r for r, p in PATHS.items() if r not in _OPTIONAL and _resolve(target, p) is None]
        if missing:
            raise AttributeError(
                f"{type(target).__name__} has no {', '.join(repr(PATHS[r]) for r in missing)} "
                f"(roles {', '.join(missing)}): this shim was generated for another layout; regenerate it "
                "with `dflash-check adapt`"
            )
        # OPT-350m style projections: composed once and registered, so each accessor returns one
        # module of the tree (its weights are the original ones; only state_dict() lists them twice).
        embed_proj = _resolve(target, PATHS["embed_proj"]) if "embed_proj" in PATHS else None
        head_proj = _resolve(target, PATHS["head_proj"]) if "head_proj" in PATHS else None
        self.projected_embed = None if embed_proj is None else _ProjectedEmbedding(
            _resolve(target, PATHS["embed"]), embed_proj)
        self.projected_head = None if head_proj is None else _ProjectedHead(head_proj, self._head())
        params = inspect.signature(target.forward).parameters
        self._accepts = frozenset(params)
        self._open = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        # transformers >= 5 names the cache `cache`; older releases and remote code `past_key_values`.
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    # ---- the pieces the draft borrows (plain passthroughs) --------------------------------

    def get_input_embeddings(self):
        if self.projected_embed is not None:
            return self.projected_embed
        return _resolve(self.target, PATHS["embed"])

    def get_output_embeddings(self):
        return self.projected_head if self.projected_head is not None else self._head()

    def _head(self):
        head = _resolve(self.target, PATHS["lm_head"]) if "lm_head" in PATHS else None
        if head is None:  # no lm_head path: whatever transformers reports (tied heads included)
            head = self.target.get_output_embeddings()
        if head is None:
            raise AttributeError("no output head found: regenerate with `dflash-check adapt --map lm_head=PATH`")
        return head

    @property
    def lm_head(self):
        return self.get_output_embeddings()

    @property
    def layers(self):
        return _resolve(self.target, PATHS["layers"])

    @property
    def norm(self):
        return _resolve(self.target, PATHS["norm"]) if "norm" in PATHS else None

    @property
    def model(self):
        return _ModelView(self)

    @property
    def device(self):
        return next(self.target.parameters()).device

    @property
    def dtype(self):
        return next(self.target.parameters()).dtype

    # ---- the forward the engines call ------------------------------------------------------

    def forward(
        self,
        input_ids=None,
        position_ids=None,
        past_key_values=None,
        use_cache=None,
        logits_to_keep=0,
        output_hidden_states=None,
        attention_mask=None,
        inputs_embeds=None,
        cache=None,
        **kwargs,
    ):
        """forward(input_ids, position_ids=, past_key_values= | cache=, use_cache=, logits_to_keep=,
        output_hidden_states=) -> output with .logits, .hidden_states and the cache."""
        kw = dict(kwargs)
        cache = cache if cache is not None else past_key_values
        if cache is not None:
            kw[self._cache_arg] = cache
        if input_ids is not None:
            kw["input_ids"] = input_ids
        for name, value in (("use_cache", use_cache), ("attention_mask", attention_mask),
                            ("inputs_embeds", inputs_embeds)):
            if value is not None and self._takes(name):
                kw[name] = value
        # Only where declared: models without position_ids (ALiBi, e.g. Bloom) derive positions
        # from the cache length, which the DFlash loop keeps equal to the positions it passes.
        if position_ids is not None and "position_ids" in self._accepts:
            kw["position_ids"] = position_ids
        keep_here = bool(logits_to_keep) and "logits_to_keep" not in self._accepts
        if logits_to_keep and not keep_here:
            kw["logits_to_keep"] = logits_to_keep
        if "return_dict" in self._accepts:
            kw["return_dict"] = True
        captured = {}
        handles = []
        if output_hidden_states:
            if self._takes("output_hidden_states"):
                kw["output_hidden_states"] = True
            if "output_hidden_states" not in self._accepts:
                # Not declared: capture HF-style hidden states (embedding output, then each
                # layer's output) with hooks, used only if the model returns none of its own.
                handles = self._hook_hidden_states(captured)
        try:
            out = self.target(**kw)
        finally:
            for h in handles:
                h.remove()
        if keep_here:
            out["logits"] = out["logits"][:, -logits_to_keep:]
        if output_hidden_states and getattr(out, "hidden_states", None) is None and captured:
            out["hidden_states"] = tuple(captured.get(i) for i in range(len(self.layers) + 1))
        return out

    def _takes(self, name):
        return name in self._accepts or self._open

    def _hook_hidden_states(self, store):
        # store[0]: the embedding output; store[i + 1]: the output of decoder layer i.
        def keeper(index):
            def keep(_module, _args, output):
                store[index] = output[0] if isinstance(output, (tuple, list)) else output

            return keep

        modules = [_resolve(self.target, PATHS["embed"]), *self.layers]
        return [m.register_forward_hook(keeper(i)) for i, m in enumerate(modules)]

    # ---- pass everything else through to the original model -------------------------------

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "target" or name.startswith("__"):
                raise
            return getattr(super().__getattr__("target"), name)

    # ---- loading through transformers ------------------------------------------------------

    @classmethod
    def from_pretrained(cls, name_or_path, *args, **kwargs):
        """Load the original model class (ARCHITECTURE) from `name_or_path`, then wrap it."""
        import transformers

        base = getattr(transformers, ARCHITECTURE, None) if ARCHITECTURE else None
        if base is None:
            if ARCHITECTURE:
                raise ValueError(f"this transformers release has no {ARCHITECTURE}")
            base = transformers.AutoModelForCausalLM
        return cls(base.from_pretrained(name_or_path, *args, **kwargs))

    @classmethod
    def register_for_auto_class(cls, auto_class="AutoModelForCausalLM"):
        """Called by transformers when this file is loaded through a config's `auto_map`."""


def wrap(model):
    """Wrap a loaded model: `adapted = wrap(AutoModelForCausalLM.from_pretrained(...))`."""
    return model if isinstance(model, DFlashAdapted) else DFlashAdapted(model)


def register(auto_class=None):
    """Make `AutoModelForCausalLM.from_pretrained` (or `auto_class`) return the adapted model for
    MODEL_TYPE checkpoints, in this process only."""
    import transformers

    if not (MODEL_TYPE and ARCHITECTURE):
        raise ValueError("register() needs MODEL_TYPE and ARCHITECTURE; regenerate with `dflash-check adapt`")
    auto = auto_class or transformers.AutoModelForCausalLM
    auto.register(transformers.CONFIG_MAPPING[MODEL_TYPE], DFlashAdapted, exist_ok=True)
