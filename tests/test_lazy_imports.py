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
from dflash_compat.cli import main
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
        "import sys\nfrom dflash_compat.cli import main\n"
        f"sys.argv = ['dflash-check', {str(ROOT / 'examples/qwen3-8b/target')!r}, '--draft', "
        f"{str(ROOT / 'examples/qwen3-8b/draft')!r}, '--no-deep', '-f', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED=' + ','.join(m for m in sys.modules if m.startswith(('dflash_compat.facts.', "
        "'dflash_compat.probe'))), file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    loaded = next(ln for ln in res.stderr.splitlines() if ln.startswith("LOADED="))[len("LOADED="):].split(",")
    # the report's deep keys are written (report_fields, and Skipped to tell a skip), no fact class is built
    assert set(loaded) <= {"dflash_compat.facts.report_fields", "dflash_compat.facts.skipped"}, loaded
