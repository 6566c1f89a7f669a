"""`--help` and config-only checks must not import torch, transformers or mlx (they start fast without them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "mlx", "mlx_lm", "safetensors", "accelerate", "numpy")

PROBE = """
import sys, json
from dflash_compat.cli.app import main
sys.argv = ["dflash-check", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
heavy = [m for m in {heavy!r} if m in sys.modules]
print("HEAVY=" + json.dumps(heavy), file=sys.stderr)
"""


def _loaded(args: list[str]) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), json.dumps(args)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert line, res.stderr
    return json.loads(line[-1][len("HEAVY="):])


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["check", "--help"],
        ["rules"],
        ["rule", "DF101"],
        ["init-draft", "--help"],
        ["train", "--help"],
        ["init-draft", str(ROOT / "examples/qwen3-8b/target"), "-o", "/nonexistent/../tmp/x", "--mask-token-id", "9999999"],
        [str(ROOT / "examples/qwen3-8b/target"), "--draft", str(ROOT / "examples/qwen3-8b/draft"), "--no-deep"],
        [str(ROOT / "examples/qwen3-8b/target"), "--draft", str(ROOT / "examples/qwen3-8b/draft"), "--no-deep", "-f", "json"],
        ["serve", "--help"],
        ["probe", "--help"],
        ["recommend", "--help"],
        ["serve", str(ROOT / "examples/qwen3-8b/target"), "--draft", str(ROOT / "examples/qwen3-8b/draft"),
         "--engine", "vllm", "--no-deep", "-f", "json"],
        ["probe", "http://127.0.0.1:9", "--model", "m", "--timeout", "1"],
    ],
)
def test_no_heavy_imports(args):
    assert _loaded(args) == []


def test_probe_detects_a_heavy_import():
    # the probe itself must be able to fail: importing torch on purpose shows up
    res = subprocess.run(
        [sys.executable, "-c", "import torch\n" + PROBE.format(heavy=HEAVY), json.dumps(["--help"])],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert 'HEAVY=["torch"' in res.stderr


def test_config_only_check_loads_no_deep_fact_classes_or_probes():
    code = (
        "import sys\nfrom dflash_compat.cli.app import main\n"
        f"sys.argv = ['dflash-check', {str(ROOT / 'examples/qwen3-8b/target')!r}, '--draft', "
        f"{str(ROOT / 'examples/qwen3-8b/draft')!r}, '--no-deep', '-f', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED=' + ','.join(m for m in sys.modules if m.startswith(('dflash_compat.modelfacts.', "
        "'dflash_compat.inspection'))), file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    loaded = next(ln for ln in res.stderr.splitlines() if ln.startswith("LOADED="))[len("LOADED="):].split(",")
    # the report's deep keys are written (report_fields, and Skipped to tell a skip), no fact class is built
    assert set(loaded) <= {"dflash_compat.modelfacts.report_fields", "dflash_compat.modelfacts.skipped"}, loaded


# --- start-up structure: what a config-only check imports and does beyond the one-model reference
# (README "Measured figures"; benchmarks/bench_cli_startup.py measures the time itself)

CONFIG_ONLY = [str(ROOT / "examples/qwen3-8b/target"), "--draft", str(ROOT / "examples/qwen3-8b/draft"), "--no-deep",
               "-f", "json"]
STARTUP = """
import gc, json, sys
from dflash_compat.cli.app import main
sys.argv = ["dflash-check", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
state = {"modules": sorted(sys.modules), "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}
print("STARTUP=" + json.dumps(state), file=sys.stderr)
"""
REFERENCE = "import click, rich, json, sys\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    x: int = 0\nM(x=1)\n" \
            "print(json.dumps(sorted(sys.modules)))"
# What a config-only check may import besides the reference's modules and dflash_compat's own
BEYOND_REFERENCE = {
    "json", "json.decoder", "json.encoder", "json.scanner", "_json",  # reading the configs
    "encodings.utf_8_sig",  # a config file may start with a byte-order mark
    "difflib", "heapq", "_heapq",  # click's parser: a short option (-f) is first looked up as a long one
    "gc",  # the collector paused while the check's modules load (cli._imports_frozen)
}
# dflash_compat modules outside the rules package that a config-only check loads (34 when this was written, and
# 12 packages: the rooms' __init__ files, docstrings only); a new one on this path costs every check its start-up:
# raise the bound only with a measurement
NON_RULE_MODULES_MAX = 40
PACKAGES_MAX = 14


def _is_package(module: str) -> bool:
    return (ROOT.joinpath(*module.split(".")) / "__init__.py").is_file()


def _startup(tmp_path, args: list[str]) -> dict:
    # an empty folder: no settings file to find and parse
    res = subprocess.run([sys.executable, "-c", STARTUP, json.dumps(args)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("STARTUP=")]
    assert line, res.stderr
    return json.loads(line[-1][len("STARTUP="):])


def test_config_only_check_imports_nothing_the_reference_does_not_besides_its_own(tmp_path):
    state = _startup(tmp_path, CONFIG_ONLY)
    ref = subprocess.run([sys.executable, "-c", REFERENCE], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    extra = set(state["modules"]) - set(json.loads(ref.stdout)) - BEYOND_REFERENCE
    assert sorted(m for m in extra if m.split(".")[0] != "dflash_compat") == []
    own = [m for m in state["modules"] if m.startswith("dflash_compat.") and not m.startswith("dflash_compat.rules")]
    modules = [m for m in own if not _is_package(m)]
    assert len(modules) <= NON_RULE_MODULES_MAX, modules
    assert len(own) - len(modules) <= PACKAGES_MAX, sorted(set(own) - set(modules))
    assert "dflash_compat.rules.common.df101_hidden_size_mismatch" in state["modules"]  # the probe sees the check's modules


def test_check_freezes_what_it_imported_in_its_own_process_only(tmp_path, monkeypatch):
    import gc

    from click.testing import CliRunner

    from dflash_compat.cli.app import cli, main

    state = _startup(tmp_path, CONFIG_ONLY)
    assert state["enabled"] is True and state["frozen"] > 20_000, state["frozen"]
    # the CLI run inside another program (here: pytest) leaves that program's collector as it was, also
    # after the console script itself ran in it
    monkeypatch.setattr("sys.argv", ["dflash-check", "--version"])
    main()
    before = gc.get_freeze_count()
    res = CliRunner().invoke(cli, CONFIG_ONLY)
    assert res.exit_code in (0, 1), res.output
    assert gc.get_freeze_count() == before and gc.isenabled()


def test_rules_are_found_by_their_packages_own_finder_during_import_only():
    import dflash_compat.rules as rules

    assert rules._OwnModules not in sys.meta_path
    module = rules.common.df101_hidden_size_mismatch
    assert module.__spec__.origin == module.__file__ == str(ROOT / "rules" / "common" / "df101_hidden_size_mismatch.py")
    assert module.__spec__.cached and module.__spec__.parent == "dflash_compat.rules.common"
    assert rules._OwnModules.find_spec("dflash_compat.rules.common.df101_hidden_size_mismatch") is not None
    family = rules._OwnModules.find_spec("dflash_compat.rules.vllm")
    assert family is not None and family.submodule_search_locations == [str(ROOT / "rules" / "vllm")]
    for other in ("json", "dflash_compat.checker", "dflash_compat.rules.no_such_rule", "dflash_compat.rules.__pycache__",
                  "dflash_compat.rules.common.no_such_rule", "dflash_compat.rules.common.df101_hidden_size_mismatch.x"):
        assert rules._OwnModules.find_spec(other) is None
