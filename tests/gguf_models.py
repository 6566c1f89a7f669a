"""Tiny GGUF targets and DFlash drafts written in the test with the `gguf` package (a dev dependency):
metadata as llama.cpp's converter writes it (raw key names: gguf 0.19.0 has no DFlash constants), and
only the tensors the rules read, as small zero arrays."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest

DELETE = object()

TOKENS = [f"tok{i}" for i in range(64)]


def write_gguf(path: Path, arch: str, kv: dict[str, Any], tensors: Optional[dict[str, tuple[int, ...]]] = None
               ) -> Path:
    """A GGUF file with `kv` (python type -> GGUF type: bool, int -> uint32 or int32, float -> float32,
    str, list) and zero tensors of the given numpy shapes (ggml order is the reverse)."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch)
    for key, value in kv.items():
        if value is DELETE:
            continue
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            (w.add_int32 if value < 0 else w.add_uint32)(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_array(key, list(value))
    for name, shape in (tensors or {"token_embd.weight": (len(TOKENS), 8)}).items():
        w.add_tensor(name, np.zeros(shape, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def target_gguf(path: Path, arch: str = "qwen3", n_layer: int = 6, hidden: int = 16, tokens=TOKENS,
                **kv: Any) -> Path:
    meta = {
        f"{arch}.block_count": n_layer, f"{arch}.embedding_length": hidden, f"{arch}.context_length": 1024,
        f"{arch}.feed_forward_length": 32, f"{arch}.attention.head_count": 2, f"{arch}.attention.head_count_kv": 1,
        f"{arch}.attention.key_length": 8, f"{arch}.rope.freq_base": 10000.0,
        f"{arch}.attention.layer_norm_rms_epsilon": 1e-6,
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": list(tokens), "tokenizer.ggml.eos_token_id": 0,
    }
    meta.update({k.replace("ARCH", arch): v for k, v in kv.items()})
    return write_gguf(path, arch, meta, {"token_embd.weight": (len(tokens), hidden)})


def draft_gguf(path: Path, hidden: int = 16, layers=(2, 5), tokens=TOKENS, fc_in: Optional[int] = None,
               tensors: Optional[dict[str, tuple[int, ...]]] = None, **kv: Any) -> Path:
    """A DFlash draft GGUF as the converter writes it: dflash.target_layers = HF ids + 1."""
    meta = {
        "dflash.block_count": 1, "dflash.embedding_length": hidden, "dflash.context_length": 1024,
        "dflash.feed_forward_length": 32, "dflash.attention.head_count": 2, "dflash.attention.head_count_kv": 1,
        "dflash.attention.key_length": 8, "dflash.rope.freq_base": 10000.0,
        "dflash.attention.layer_norm_rms_epsilon": 1e-6, "dflash.block_size": 8,
        "dflash.target_layers": DELETE if layers is DELETE else list(layers),
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": list(tokens), "tokenizer.ggml.eos_token_id": 0,
        "tokenizer.ggml.mask_token_id": 1,
    }
    meta.update({k.replace("__", "."): v for k, v in kv.items()})
    n = 2 if layers is DELETE else len(layers)
    shapes = {"fc.weight": (hidden, fc_in if fc_in is not None else n * hidden), "enc_output_norm.weight": (hidden,),
              "output_norm.weight": (hidden,)}
    shapes.update(tensors or {})
    return write_gguf(path, "dflash", meta, shapes)
