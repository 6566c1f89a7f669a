"""Reading an engine release from its source distribution (vLLM's sdist is ~45 MB where its wheel is
~300 MB), a vLLM registry from before `_resolve_module_name`, and vLLM's first release with DFlash as
docs/engine-facts.md states it, checked against the sdists where they are downloaded."""

from __future__ import annotations

import ast
import io
import os
import re
import tarfile
from pathlib import Path

import pytest

from dflash_compat.enginefacts import build, vllm
from dflash_compat.enginefacts.source import LayoutError, SourceTree

ROOT = Path(__file__).resolve().parent.parent
SDISTS = Path(os.environ.get("DFLASH_VLLM_SDISTS", "/work/wheels/vllm-sdist"))


def _sdist(path: Path, top: str, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_source_distribution_reads_as_the_package_tree(tmp_path):
    path = _sdist(tmp_path / "vllm-0.20.0.tar.gz", "vllm-0.20.0", {
        "PKG-INFO": "Name: vllm\n",
        "vllm/__init__.py": "",
        "vllm/config/speculative.py": "DFlashModelTypes = 'dflash'\n",
        "vllm/model_executor/models/qwen3_dflash.py": "class DFlashQwen3ForCausalLM:\n    pass\n",
        "vllm/data/notes.txt": "not python\n",
        "tests/test_x.py": "x = 1\n",
    })
    tree = SourceTree.open(path)
    assert tree.exists("vllm/config/speculative.py") and not tree.exists("vllm-0.20.0/vllm/__init__.py")
    assert list(tree.files("vllm/model_executor/models")) == ["vllm/model_executor/models/qwen3_dflash.py"]
    assert tree.parse("vllm/model_executor/models/qwen3_dflash.py").body[0].name == "DFlashQwen3ForCausalLM"
    assert tree.read("vllm/data/notes.txt") == "not python\n"  # a non-.py member, read on demand
    with pytest.raises(LayoutError, match="is missing"):
        tree.read("vllm/v1/spec_decode/dflash.py")
    # `refresh --wheels DIR` finds NAME-VERSION.tar.gz when DIR has no wheel or unpacked folder of it
    assert build.locate("vllm", tmp_path, tmp_path, "0.20.0") == path
    assert build.wheel_version(path) == "0.20.0"
    with pytest.raises(LayoutError, match=r"nor vllm-0\.19\.1\.tar\.gz"):
        build.locate("vllm", tmp_path, tmp_path, "0.19.1")


def test_a_broken_source_distribution_is_a_layout_error(tmp_path):
    bad = tmp_path / "vllm-0.20.0.tar.gz"
    bad.write_bytes(b"not a tar file")
    with pytest.raises(LayoutError, match="not a readable source distribution"):
        SourceTree.open(bad)


REGISTRY_0_20 = '''
_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS}
ModelRegistry = _ModelRegistry(
    {
        model_arch: _LazyRegisteredModel(
            module_name=f"vllm.model_executor.models.{mod_relname}",
            class_name=cls_name,
        )
        for model_arch, (mod_relname, cls_name) in _VLLM_MODELS.items()
    }
)
'''
REGISTRY_0_32 = '''
def _resolve_module_name(mod_relname: str) -> str:
    if mod_relname.startswith("vllm."):
        return mod_relname
    return f"vllm.model_executor.models.{mod_relname}"
'''


def test_the_registry_module_prefix_before_and_after_resolve_module_name():
    """vLLM 0.20.0 builds each lazy registry entry with `module_name=f"vllm.model_executor.models.{...}"`
    (vllm/model_executor/models/registry.py:1307); 0.32.0 has `_resolve_module_name` (registry.py:1528-1534)."""
    assert vllm._module_prefix(ast.parse(REGISTRY_0_20).body) == "vllm.model_executor.models."
    assert vllm._module_prefix(ast.parse(REGISTRY_0_32).body) == "vllm.model_executor.models."
    with pytest.raises(LayoutError, match="_resolve_module_name"):
        vllm._module_prefix(ast.parse("X = 1\n").body)


def _docs_first_release() -> tuple[str, str]:
    text = (ROOT / "docs" / "engine-facts.md").read_text(encoding="utf-8")
    row = re.search(r"^\| vLLM \| (\S+) \((\S+) has none\) \|", text, re.M)
    assert row, "docs/engine-facts.md: no vLLM row in the first-release table"
    return row.group(1), row.group(2)


def test_the_docs_name_vllm_s_first_release_with_dflash():
    first, before = _docs_first_release()
    assert (first, before) == ("0.20.0", "0.19.1")


def test_vllm_s_first_release_with_dflash_is_what_its_sdists_say():
    """The bisection of docs/engine-facts.md, re-read from the two sdists: 0.20.0 lists method `dflash`
    (vllm/config/speculative.py:53-56) and registers DFlashDraftModel (registry.py:576); 0.19.1 has no
    `dflash` in any Python file under vllm/."""
    first, before = _docs_first_release()
    paths = [SDISTS / f"vllm-{v}.tar.gz" for v in (first, before)]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"vLLM sdists not in {SDISTS}: fetch vllm-{first}.tar.gz and vllm-{before}.tar.gz from the "
                    "URLs in https://pypi.org/pypi/vllm/json (or set DFLASH_VLLM_SDISTS)")
    new, old = (SourceTree.open(p) for p in paths)
    assert vllm.dflash_rename(new).prefix == "DFlash"  # EAGLEConfig's method-dflash rename (raises if absent)
    spec = new.read("vllm/config/speculative.py")
    assert re.search(r'^DFlashModelTypes = Literal\["dflash"\]', spec, re.M)
    assert new.exists("vllm/model_executor/models/qwen3_dflash.py") and new.exists("vllm/v1/spec_decode/dflash.py")
    registry = vllm.read_registry(new)
    assert ("DFlashDraftModel", "vllm.model_executor.models.qwen3_dflash") in {
        (e.arch, e.module) for entries in registry.values() for e in entries}
    python = [n for n in old._names if n.startswith("vllm/") and n.endswith(".py")]
    assert len(python) > 1000 and not [n for n in python if "dflash" in old.read(n).lower()]


@pytest.mark.engine_wheels
def test_an_sdist_gives_the_facts_its_wheel_gives(tmp_path, monkeypatch):
    """vLLM 0.32.0 read from its sdist and from its wheel: the same facts and sources, byte for byte."""
    from dflash_compat.enginefacts.__main__ import main

    wheels = Path(os.environ.get("DFLASH_WHEELS", "/work/wheels"))
    wheel = sorted(wheels.glob("vllm-0.32.0-*.whl"))
    sdist = SDISTS / "vllm-0.32.0.tar.gz"
    if not wheel or not sdist.is_file():
        pytest.skip("needs vllm-0.32.0's wheel (pip download --no-deps vllm==0.32.0 -d /work/wheels) and its sdist "
                    f"in {SDISTS}")
    out = {}
    for kind, path in (("wheel", wheel[0]), ("sdist", sdist)):
        folder = tmp_path / kind
        folder.mkdir()
        (folder / path.name).symlink_to(path)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"cache-{kind}"))
        assert main(["refresh", "--engine", "vllm==0.32.0", "--wheels", str(folder)]) == 0
        facts = tmp_path / f"cache-{kind}" / "dflash-compat" / "facts" / "vllm" / "0.32.0"
        out[kind] = [(facts / name).read_bytes() for name in ("facts.json", "sources.json")]
    assert out["wheel"] == out["sdist"]
