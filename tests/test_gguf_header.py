"""The bounded GGUF header reader: files written by the `gguf` package read back exactly; hostile and
broken files are one WeightsError line (never a traceback, a hang or a huge allocation)."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys

import pytest

from dflash_compat.exceptions import WeightsError
from dflash_compat.files.gguf_header import GGUFArray, parse_gguf_header, read_gguf_header
from dflash_compat.resolve.refs import resolve
from dflash_compat.specs.gguf import gguf_draft_config, gguf_info
from tests.gguf_models import TOKENS, draft_gguf, target_gguf

pytest.importorskip("gguf")


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _head(n_tensors=0, n_kv=0, version=3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def test_reads_what_the_gguf_package_writes(tmp_path):
    path = draft_gguf(tmp_path / "d.gguf")
    h = read_gguf_header(path)
    assert h.version == 3 and h.architecture == "dflash"
    assert h.kv["dflash.target_layers"] == [2, 5] and h.kv["dflash.block_size"] == 8
    assert h.kv["tokenizer.ggml.tokens"] == TOKENS  # 64 tokens: kept as values
    assert h.tensors["fc.weight"] == ("F32", (32, 16))  # ggml order: ne[0] = n_extract x n_embd
    assert h.header_bytes < path.stat().st_size


def test_long_arrays_are_summarised_by_count_and_digest(tmp_path):
    many = [f"t{i}" for i in range(5000)]
    a = read_gguf_header(target_gguf(tmp_path / "a.gguf", tokens=many))
    b = read_gguf_header(target_gguf(tmp_path / "b.gguf", tokens=many[:-1] + ["other"]))
    ta, tb = a.kv["tokenizer.ggml.tokens"], b.kv["tokenizer.ggml.tokens"]
    assert isinstance(ta, GGUFArray) and ta.count == tb.count == 5000 and ta.sha256 != tb.sha256
    assert gguf_info(a).vocab_count == 5000


def test_draft_config_shifts_layers_back_to_hf_ids(tmp_path):
    info = gguf_info(read_gguf_header(draft_gguf(tmp_path / "d.gguf", layers=[2, 5])))
    cfg = gguf_draft_config(info, "draft")
    assert cfg["dflash_config"]["target_layer_ids"] == [1, 4] and cfg["architectures"] == ["DFlashDraftModel"]


@pytest.mark.parametrize("blob, words", [
    (b"", "not a GGUF file"),
    (b"PK\x03\x04" + b"\0" * 40, "not a GGUF file"),
    (_head(version=1), "version 1"),
    (b"GGUF" + struct.pack(">I", 3) + b"\0" * 16, "big-endian"),
    (_head(version=9), "unknown GGUF version 9"),
    (_head()[:-3], "truncated"),
    (_head(n_kv=10**12), "metadata keys"),
    (_head(n_tensors=10**12), "tensors"),
    (_head(n_kv=1) + struct.pack("<Q", 1 << 40), "a metadata key of"),
    (_head(n_kv=1) + _s("k") + struct.pack("<I", 99), "unknown value type 99"),
    (_head(n_kv=1) + _s("k") + struct.pack("<IIQ", 9, 4, 1 << 40), "array of"),
    (_head(n_kv=1) + _s("k") + struct.pack("<I", 8) + struct.pack("<Q", 1 << 50), "more than"),
    (_head(n_kv=1) + _s("k") + struct.pack("<I", 8) + struct.pack("<Q", 2) + b"\xff\xfe", "not UTF-8"),
    (_head(n_kv=2) + (_s("k") + struct.pack("<II", 4, 1)) * 2, "duplicate key"),
    (_head(n_kv=1) + _s("k") + struct.pack("<IIQ", 9, 9, 1) + struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 4, 0),
     "nests arrays"),
    (_head(n_tensors=1) + _s("w") + struct.pack("<I", 7), "dimensions"),
    (_head(n_tensors=1) + _s("w") + struct.pack("<IQ", 1, 1 << 50), "dimension over"),
])
def test_hostile_headers_fail_in_one_line(tmp_path, blob, words):
    path = tmp_path / "bad.gguf"
    path.write_bytes(blob)
    with pytest.raises(WeightsError) as err:
        read_gguf_header(path)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_header_byte_cap_stops_the_read():
    blob = _head(n_kv=1) + _s("k") + struct.pack("<I", 8) + _s("x" * 5000)
    with pytest.raises(WeightsError, match="runs past 1000 bytes"):
        parse_gguf_header(io.BytesIO(blob), "big.gguf", limit=1000)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    code = f"from dflash_compat.files.gguf_header import read_gguf_header; read_gguf_header({str(fifo)!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "is a FIFO, not a regular file" in proc.stderr


def test_resolve_accepts_a_gguf_file_and_a_folder_of_one(tmp_path):
    (tmp_path / "m").mkdir()
    path = target_gguf(tmp_path / "m" / "model-Q8_0.gguf")
    assert resolve(str(path), "target").gguf == str(path)
    assert resolve(str(tmp_path / "m"), "target").gguf == str(path)
    target_gguf(tmp_path / "m" / "model-F16.gguf")
    from dflash_compat.exceptions import ResolutionError

    with pytest.raises(ResolutionError, match="2 GGUF files"):
        resolve(str(tmp_path / "m"), "target")


def test_cli_checks_a_gguf_pair_and_refuses_other_backends(tmp_path):
    t, d = target_gguf(tmp_path / "t.gguf"), draft_gguf(tmp_path / "d.gguf", layers=[2, 6])
    run = [sys.executable, "-m", "dflash_compat", "check", str(t), "--draft", str(d), "--no-config"]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "DF803" in proc.stdout and "llama.cpp" in proc.stdout
    proc = subprocess.run(run + ["-b", "vllm"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "llama.cpp backend only" in proc.stderr and "Traceback" not in proc.stderr


def test_hub_gguf_header_is_read_through_ranged_reads(tmp_path):
    from dflash_compat.resolve.hub import gguf_files, read_hub_gguf_header

    path = draft_gguf(tmp_path / "d.gguf")
    opened = []

    class FS:  # huggingface_hub.HfFileSystem's open(), as the reader uses it
        def open(self, name, mode, block_size):
            opened.append((name, block_size))
            return open(path, "rb")

    class Api:
        def list_repo_files(self, repo_id, revision=None, token=None):
            return ["README.md", "d-Q8_0.gguf", "big-00002-of-00002.gguf"]

    assert gguf_files("org/d", revision=None, token=None, who="draft org/d", api=Api()) == ["d-Q8_0.gguf"]
    h = read_hub_gguf_header("org/d", "d-Q8_0.gguf", revision="main", token=None, fs=FS())
    assert h.architecture == "dflash" and opened == [("org/d@main/d-Q8_0.gguf", 1 << 20)]


def test_hostile_strings_from_a_gguf_never_reach_the_terminal_raw(tmp_path):
    t = target_gguf(tmp_path / "t.gguf", arch="qw\x1b[31men\nX; rm -rf")
    d = draft_gguf(tmp_path / "d.gguf", dflash__hidden_activation="re\x1b[2Jlu\n#")
    for extra in ([], ["serve", "-e", "llama.cpp"]):
        run = [sys.executable, "-m", "dflash_compat", *extra[:1], str(t), "--draft", str(d), *extra[1:]]
        if not extra:
            run.append("--no-config")
        proc = subprocess.run(run, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1 and "\x1b" not in proc.stdout and "DF811" in proc.stdout
        assert "\nX; rm -rf" not in proc.stdout


def test_report_shows_the_gguf_header_facts(tmp_path):
    t, d = target_gguf(tmp_path / "t.gguf"), draft_gguf(tmp_path / "d.gguf")
    run = [sys.executable, "-m", "dflash_compat", "check", str(t), "--draft", str(d), "--no-config"]
    doc = __import__("json").loads(subprocess.run(run + ["-f", "json"], capture_output=True, text=True,
                                                  timeout=300).stdout)
    g = doc["draft"]["gguf"]
    assert g["architecture"] == "dflash" and g["keys"]["dflash.target_layers"] == [2, 5] and g["vocab_count"] == 64
    assert doc["target"]["gguf"]["architecture"] == "qwen3" and doc["backends"] == ["llama.cpp"]
    text = subprocess.run(run, capture_output=True, text=True, timeout=300).stdout
    assert "layer ids [1, 4] (GGUF dflash.target_layers [2, 5])" in " ".join(text.split())
