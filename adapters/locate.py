"""The one module locator: where a transformers causal LM keeps its input embedding, output head, decoder
layers and final norm. The deep check (dflash_compat.inspection.torch_locate, on a meta-device model), the
PyTorch runtime's default adapter (smoke, train, serve) and `adapt` (through the deep check's paths) all
ask this module, so a layout the check can read is a layout smoke runs, and the other way round.

Pure lookups over `named_modules()`; torch is imported inside the functions.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from dflash_compat.contract import FINAL_NORM_NAMES

__all__ = ["LAYER_LIST_NAMES", "Located", "call_hook", "config_layers", "find_embed", "find_head", "find_layers",
           "final_norm", "is_text", "locate_modules", "module_names", "text_config"]

# Leaf names of a decoder's block list (Llama `layers`, GPT-2/CTRL `h`, DBRX `blocks`, BERT `layer`, ...).
LAYER_LIST_NAMES = ("layers", "h", "blocks", "layer", "block")
_NOT_TEXT = ("vision", "visual", "audio", "image", "vit", "mm_projector", "multi_modal_projector", "speech")


class Located(NamedTuple):
    """What the locator found: modules, their dotted paths and how each was found (None: not found)."""

    embed: Any
    embed_path: Optional[str]
    embed_via: Optional[str]
    head: Any
    head_path: Optional[str]
    head_via: Optional[str]
    layers: Any  # the nn.ModuleList of decoder layers
    layers_path: Optional[str]
    layers_via: Optional[str]
    norm_path: Optional[str]
    decoder_path: Optional[str]
    config_layers: Optional[int]


def call_hook(obj: Any, method: str) -> Any:
    """`obj.method()` for transformers' accessor hooks; None where the model lacks or refuses it."""
    fn = getattr(obj, method, None)
    if fn is None:
        return None
    try:
        return fn()
    except Exception:  # noqa: BLE001 - NotImplementedError/AttributeError on models without the hook
        return None


def text_config(model: Any) -> Any:
    """The language model's config (a VLM's text_config, else the config itself)."""
    cfg = model.config
    try:
        return cfg.get_text_config(decoder=True)
    except Exception:  # noqa: BLE001 - older transformers: no decoder= keyword
        return getattr(cfg, "text_config", None) or cfg


def module_names(model: Any) -> dict[int, str]:
    # named_modules() yields each module once, under its first path: the path engines use.
    return {id(m): n for n, m in model.named_modules()}


def is_text(path: str) -> bool:
    return not any(part in path.lower() for part in _NOT_TEXT)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def config_layers(model: Any, default: Optional[int] = None) -> Optional[int]:
    """How many decoder layers the config declares. Decoder-only configs say num_hidden_layers;
    encoder-decoder style ones (Blenderbot, ...) map that name to the encoder and count the decoder
    separately; GPT-2 style ones say n_layer, XLM n_layers."""
    cfg = text_config(model)
    for key in ("decoder_layers", "num_hidden_layers", "n_layer", "n_layers", "num_layers"):
        found = _int(getattr(cfg, key, None))
        if found:
            return found
    return default


def find_embed(model: Any, names: dict[int, str], vocab: Optional[int]) -> tuple[Any, Optional[str]]:
    import torch.nn as nn

    emb = call_hook(model, "get_input_embeddings")
    if emb is not None and id(emb) in names:
        return emb, "get_input_embeddings"
    for path, m in model.named_modules():
        if isinstance(m, nn.Embedding) and (vocab is None or m.num_embeddings == vocab) and is_text(path):
            return m, "search"
    return None, None


def find_head(model: Any, names: dict[int, str], vocab: Optional[int]) -> tuple[Any, Optional[str]]:
    import torch.nn as nn

    head, via = getattr(model, "lm_head", None), "lm_head"
    if not isinstance(head, nn.Module):
        head, via = call_hook(model, "get_output_embeddings"), "get_output_embeddings"
    if head is not None and id(head) in names:
        return head, via
    found = None
    for path, m in model.named_modules():
        if isinstance(m, nn.Linear) and (vocab is None or m.out_features == vocab) and is_text(path):
            found = m  # the last vocab-wide projection is the output head
    return found, "search" if found is not None else None


def find_layers(model: Any, decoder_path: Optional[str], n_layers: Optional[int]) -> tuple[Optional[str], Optional[str]]:
    """The decoder's ModuleList of `n_layers` blocks (vision towers excluded), and how it was found.

    Where a model keeps no block module but parallel lists, one per sub-layer (XLM: transformer.attentions,
    layer_norm1, ffns, layer_norm2; transformers 5.25.0 models/xlm/modeling_xlm.py:717-724), the layer's
    output (hidden_states[i + 1], :834-855) is the LAST list's: its post-norm, registered in forward order."""
    import torch.nn as nn

    lists = [(p, m) for p, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) and is_text(p)]
    prefix = decoder_path
    scoped = [(p, m) for p, m in lists if prefix is None or prefix == "" or p.startswith(prefix + ".")] or lists
    if not scoped:
        return None, None
    order = {p: i for i, (p, _) in enumerate(scoped)}

    def rank(item):
        p, m = item
        leaf = p.rsplit(".", 1)[-1]
        return (len(m) != n_layers, leaf not in LAYER_LIST_NAMES, p.count("."), -len(m), order[p])

    best = min(scoped, key=rank)
    leaf = best[0].rsplit(".", 1)[-1]
    if leaf not in LAYER_LIST_NAMES:
        if len(best[1]) != n_layers:
            return None, None
        # No named block list: parallel per-sub-layer lists under one parent; the last one holds the output.
        parent = best[0].rpartition(".")[0]
        siblings = [p for p, m in scoped if p.rpartition(".")[0] == parent and len(m) == n_layers
                    and p.count(".") == best[0].count(".")]
        best = (siblings[-1], None) if siblings else best
    layers = best[0]
    via = "get_decoder" if prefix is not None and layers.startswith(f"{prefix}.") else "search"
    return layers, via


def final_norm(model: Any, decoder: Any, names: dict[int, str]) -> Optional[str]:
    """The decoder's final norm (Llama/Qwen `model.norm`, GPT-2 `transformer.ln_f`, OPT `final_layer_norm`)."""
    import torch.nn as nn

    for owner in (decoder, model):
        if owner is None:
            continue
        for attr in FINAL_NORM_NAMES:
            m = getattr(owner, attr, None) if attr in getattr(owner, "_modules", {}) else None
            if isinstance(m, nn.Module) and "norm" in type(m).__name__.lower() and id(m) in names:
                return names[id(m)]
    return None


def locate_modules(model: Any, vocab: Optional[int] = None, n_layers: Optional[int] = None) -> Located:
    """Every piece the draft borrows, found the one way the check, smoke and adapt share."""
    names = module_names(model)
    vocab = getattr(text_config(model), "vocab_size", None) or vocab
    n_layers = config_layers(model, n_layers)
    emb, embed_via = find_embed(model, names, vocab)
    head, head_via = find_head(model, names, vocab)
    decoder = call_hook(model, "get_decoder")
    decoder_path = names.get(id(decoder)) if decoder is not None else None
    layers_path, layers_via = find_layers(model, decoder_path, n_layers)
    return Located(
        embed=emb, embed_path=names.get(id(emb)) if emb is not None else None, embed_via=embed_via,
        head=head, head_path=names.get(id(head)) if head is not None else None, head_via=head_via,
        layers=model.get_submodule(layers_path) if layers_path is not None else None,
        layers_path=layers_path, layers_via=layers_via,
        norm_path=final_norm(model, decoder, names), decoder_path=decoder_path, config_layers=n_layers,
    )
