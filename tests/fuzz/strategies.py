"""Hypothesis strategies for hostile input: mutated real configs, broken safetensors headers, option values.

Shared by tests/test_fuzz.py (a fixed budget in CI) and benchmarks/fuzz_long.py (the long run).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from hypothesis import strategies as st

from .cases import PAIRS, TINY, Case, Op, base_config

__all__ = ["hostile_values", "config_cases", "deep_config_cases", "deep_full_config_cases", "header_cases",
           "weights_bytes", "index_bytes", "KEYS"]

# Keys the contract reads (top level, or under dflash_config / text_config / rope_scaling): mutated more often
# than the rest of a config, so the budget goes where the parsers are.
KEYS = (
    "hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "max_position_embeddings", "rope_theta", "rope_scaling", "rope_parameters",
    "partial_rotary_factor", "sliding_window", "use_sliding_window", "layer_types", "tie_word_embeddings",
    "torch_dtype", "dtype", "architectures", "model_type", "eos_token_id", "bos_token_id", "pad_token_id",
    "block_size", "num_target_layers", "dflash_config", "text_config", "quantization_config",
    "num_experts", "num_local_experts", "num_experts_per_tok", "hidden_act", "rms_norm_eps",
    "auto_map", "target_layer_ids", "mask_token_id", "aux_hidden_state_layer_ids", "transformer_layer_config",
    "speculators_model_type", "speculators_config", "draft_vocab_size", "target_hidden_size", "vision_config",
    "attention_chunk_size", "final_logit_softcapping", "logits_scaling", "embedding_multiplier",
)
SIZE_KEYS = (("num_hidden_layers",), ("hidden_size",), ("vocab_size",), ("num_attention_heads",),
             ("intermediate_size",), ("num_experts",), ("num_local_experts",), ("text_config", "num_hidden_layers"),
             ("vision_config", "depth"), ("block_size",), ("dflash_config", "block_size"))
NESTED = ("dflash_config", "text_config", "rope_scaling", "transformer_layer_config", "quantization_config")

HUGE_INTS = (2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63), -1, 0, 10**5, 10**7, 10**9)
# strings that broke renderers or parsers somewhere: markup, escapes, annotations, surrogates, paths
NASTY = (
    "", " ", "[/x]", "[bold]b[/bold]", "\x1b[31mred\x1b[0m", "\x1b]0;t\x07", "nul\x00", "::error::x", "%0A",
    "\ud800", "\udfff", "\u202e", "\u2028", "\ufeff", "../../etc/passwd", "/dev/zero", "a" * 300, "é" * 50,
    "DF101", "null", "NaN", "1e309", "-1", "0x10", "qwen3", "llama", "DFlashDraftModel", "<x>&amp;", "]]>",
)


def _text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(NASTY), st.text(max_size=40),
                     st.text(st.characters(min_codepoint=0, max_codepoint=0x3000), max_size=12))


def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(HUGE_INTS), st.integers(-10, 300), st.integers(),
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from((0.5, -0.0, 1e-300, 1e300, 3.0)),
        st.booleans(), st.none(), _text(),
    )


def _nested(depth: int) -> Any:
    return [] if depth == 0 else [_nested(depth - 1)] if depth % 2 else {"a": _nested(depth - 1)}


def hostile_values() -> st.SearchStrategy[Any]:
    """What a hostile config puts in a field: wrong types, huge / negative / float / bool values,
    nested containers, deep nesting, markup and control strings, lone surrogates."""
    containers = st.recursive(_scalars(), lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(_text(), inner, max_size=4)), max_leaves=8)
    return st.one_of(
        _scalars(), containers,
        st.integers(1, 200).map(_nested), st.sampled_from((70, 200)).map(_nested),
        st.lists(st.integers(-3, 300), max_size=8), st.lists(st.sampled_from(HUGE_INTS), min_size=1, max_size=3),
    )


def _paths(doc: Any, prefix: tuple = (), limit: int = 400) -> list[tuple]:
    out: list[tuple] = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        out.append(prefix + (key,))
        if len(out) < limit:
            out += _paths(value, prefix + (key,), limit - len(out))
    return out[:limit]


_RAW_FILES = (
    b"", b"{", b"[]", b"null", b"42", b'"text"', b"\xff\xfe{}", b"\xef\xbb\xbf{}", b"{\"a\": NaN}",
    b"[" * 100_000 + b"]" * 100_000, b"{\"hidden_size\": " + b"9" * 5000 + b"}", b"\x00" * 64,
    b"{\"a\": 1, \"a\": [2]}", b"{\"hidden_size\": " + b"[" * 5000 + b"]" * 5000 + b"}", b"{\"dflash_config\": {\"target_layer_ids\": [1e400]}}",
)


@st.composite
def _ops(draw, doc: Any, max_ops: int = 3) -> tuple[Op, ...]:
    """1..max_ops mutations of `doc`: set / delete an existing or contract key, or (rarely) raw bytes."""
    paths = _paths(doc)
    contract = [(k,) for k in KEYS] + [(n, k) for n in NESTED for k in KEYS[:30]]
    ops = []
    for _ in range(draw(st.integers(1, max_ops))):
        choice = draw(st.integers(0, 19))
        if choice == 0:
            text = json.dumps(doc).encode("utf-8")
            raw = draw(st.one_of(st.sampled_from(_RAW_FILES), st.binary(max_size=64),
                                 st.integers(0, len(text)).map(lambda n, t=text: t[:n])))
            ops.append(Op("raw", (), raw))
            break
        if choice == 19:  # a size no real model has: must be a finding or one line at once, never a long build
            size_key = draw(st.sampled_from(SIZE_KEYS))
            ops.append(Op("set", size_key, draw(st.sampled_from((10**5, 10**6, 10**7, 2**31, 2**63)))))
            continue
        path = draw(st.sampled_from(paths if choice < 9 and paths else contract))
        if choice in (1, 2, 9):
            ops.append(Op("delete", path))
        else:
            ops.append(Op("set", path, draw(hostile_values())))
    return tuple(ops)


@st.composite
def config_cases(draw, pairs: tuple[str, ...] = tuple(PAIRS), deep: bool = False, kind: str = "config") -> Case:
    """A real pair with its target, its draft or both configs mutated; checked with --no-deep unless `deep`."""
    pair = draw(st.sampled_from(pairs))
    sides = draw(st.sampled_from(("target", "draft", "both")))
    t_ops = draw(_ops(base_config(pair, "target"))) if sides in ("target", "both") else ()
    d_ops = draw(_ops(base_config(pair, "draft"))) if sides in ("draft", "both") else ()
    fmt = draw(st.sampled_from(("text", "json", "sarif", "junit", "github")))
    args = ["--format", fmt] + ([] if deep else ["--no-deep"])
    if deep:
        args += ["--framework", draw(st.sampled_from(("torch", "mlx", "auto")))]
    return Case(pair, t_ops, d_ops, args=tuple(args), tags=(kind,))


def deep_full_config_cases() -> st.SearchStrategy[Case]:
    """Mutated full-size configs through the deep check (a meta-device build of the real target: ~0.5 s)."""
    return config_cases(deep=True, kind="config-deep-full")


def deep_config_cases() -> st.SearchStrategy[Case]:
    """Mutated configs through the deep check, on the tiny pair (real weights; builds in milliseconds)."""
    return config_cases(pairs=(TINY,), deep=True, kind="config-deep")


# ---------------------------------------------------------------------------------------------
# safetensors headers
# ---------------------------------------------------------------------------------------------

_TINY_WEIGHTS = (PAIRS[TINY] / "draft" / "model.safetensors").read_bytes()
_TINY_LEN = struct.unpack("<Q", _TINY_WEIGHTS[:8])[0]
_TINY_HEADER = json.loads(_TINY_WEIGHTS[8:8 + _TINY_LEN])
_TINY_DATA = _TINY_WEIGHTS[8 + _TINY_LEN:]
_DTYPES = ("F32", "F16", "BF16", "F4", "F6_E2M3", "F8_E4M3", "BOOL", "I64", "C64", "F128", "f32", "", "Q4_K")


def _entry_values() -> st.SearchStrategy[Any]:
    return st.one_of(hostile_values(), st.lists(st.sampled_from(HUGE_INTS), max_size=4),
                     st.lists(st.integers(-5, 100_000), max_size=6))


@st.composite
def _header_doc(draw) -> dict:
    """The tiny draft's real header with entries bent: dtype, shape, offsets, names, metadata."""
    doc = json.loads(json.dumps(_TINY_HEADER))
    names = [n for n in doc if n != "__metadata__"]
    for _ in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(names))
        field = draw(st.sampled_from(("dtype", "shape", "data_offsets", "entry", "name", "metadata", "drop", "add")))
        if not isinstance(doc[name], dict) and field in ("dtype", "shape", "data_offsets"):
            field = "entry"  # an entry already replaced by a non-object has no fields left to bend
        if field == "dtype":
            doc[name]["dtype"] = draw(st.one_of(st.sampled_from(_DTYPES), hostile_values()))
        elif field in ("shape", "data_offsets"):
            doc[name][field] = draw(_entry_values())
        elif field == "entry":
            doc[name] = draw(hostile_values())
        elif field == "name":
            doc[draw(_text())] = doc.pop(name)
            names.remove(name)
        elif field == "metadata":
            doc["__metadata__"] = draw(hostile_values())
        elif field == "drop":
            doc.pop(name)
            names.remove(name)
        else:
            doc[draw(_text())] = {"dtype": draw(st.sampled_from(_DTYPES)), "shape": draw(_entry_values()),
                                  "data_offsets": draw(_entry_values())}
        if not names:
            break
    return doc


def _pack(header: bytes, data: bytes, length: int | None = None) -> bytes:
    return struct.pack("<Q", len(header) if length is None else length) + header + data


@st.composite
def weights_bytes(draw) -> bytes:
    """A draft model.safetensors: the real one truncated, with a wrong length, bad JSON, or bent entries."""
    kind = draw(st.integers(0, 9))
    if kind == 0:  # truncated anywhere, including inside the length and the header
        return _TINY_WEIGHTS[:draw(st.integers(0, len(_TINY_WEIGHTS) - 1))]
    if kind == 1:  # a wrong header length
        length = draw(st.one_of(st.sampled_from((0, 1, 7, _TINY_LEN - 1, _TINY_LEN + 1, 100_000_001, 2**63, 2**64 - 1)),
                                st.integers(0, 2**64 - 1)))
        return _pack(_TINY_WEIGHTS[8:8 + _TINY_LEN], _TINY_DATA, length)
    if kind == 2:  # a header that is not a JSON object
        raw = draw(st.one_of(st.sampled_from(_RAW_FILES), st.binary(min_size=1, max_size=64)))
        return _pack(raw, _TINY_DATA)
    data = _TINY_DATA[:draw(st.integers(0, len(_TINY_DATA)))] if kind == 3 else _TINY_DATA
    header = json.dumps(draw(_header_doc())).encode("utf-8")
    return _pack(header, data)


@st.composite
def index_bytes(draw) -> bytes:
    """A shard index beside the draft's weights: missing, foreign, pickled, escaping or malformed shards."""
    shard = draw(st.one_of(st.sampled_from(("model.safetensors", "model-00002.safetensors", "pytorch_model.bin",
                                            "../target/model.safetensors", "/etc/passwd", ".hidden.safetensors",
                                            "a/b.safetensors", "")), _text()))
    names = [n for n in _TINY_HEADER if n != "__metadata__"]
    wmap = {n: draw(st.one_of(st.just("model.safetensors"), st.just(shard), hostile_values())) for n in names[:6]}
    doc = draw(st.one_of(st.just({"metadata": {"total_size": 1}, "weight_map": wmap}),
                         st.builds(lambda v: {"weight_map": v}, hostile_values()), hostile_values()))
    return draw(st.one_of(st.just(json.dumps(doc).encode("utf-8")), st.sampled_from(_RAW_FILES)))


@st.composite
def header_cases(draw) -> Case:
    """The tiny pair through the deep check with a hostile draft model.safetensors (and maybe an index)."""
    weights = draw(weights_bytes())
    index = draw(st.one_of(st.none(), index_bytes())) if draw(st.integers(0, 4)) == 0 else None
    fmt = draw(st.sampled_from(("text", "json", "sarif", "junit", "github")))
    framework = draw(st.sampled_from(("mlx", "torch")))
    return Case(TINY, weights=weights, index=index, args=("--format", fmt, "--framework", framework),
                tags=("header",))
