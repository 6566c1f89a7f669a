"""DF009: per-engine verdicts for each draft family, from data/draft_families.json, with their sources."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dflash_compat.engines.families import all_sources, engines_loading, family_support
from dflash_compat.engines.store import draft_support, newest_versions
from dflash_compat.rules.inputs.df009_draft_family_not_loadable import FAMILY_BACKENDS
from dflash_compat.specs.families import DFLASH_PACKAGE_FORMATS, FAMILIES
from tests.configs import merge, run_rule, target
from tests.test_families import FAMILY_CONFIGS

DATA = Path(__file__).resolve().parent.parent / "dflash_compat" / "engines" / "data" / "draft_families.json"
WHEELS = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))


def verdicts(draft_cfg, target_cfg=None):
    return {(f.backend, f.severity) for f in run_rule("DF009", target_cfg or target(), draft_cfg)}


# `transformers` (native generate) builds only the Muse-Glimmer assistant; `dflash` is the reference. A draft
# one transformers runtime loads and the other does not is an info there (another runtime, not a bad pair).
@pytest.mark.parametrize("fmt, refused, warned", [
    ("zlab-v1", set(), {"transformers"}),
    ("zlab-v2", set(), {"transformers"}),
    ("qwen3-xpress", {"transformers", "dflash", "sglang", "mlx"}, set()),
    ("minimax-dflash2", {"transformers", "dflash", "vllm", "mlx"}, set()),
    ("domino", {"transformers", "dflash", "vllm", "mlx"}, set()),
    ("speculators", {"transformers", "dflash", "sglang", "mlx"}, set()),
    ("speculators-dflash2", {"transformers", "dflash", "sglang", "mlx"}, set()),
    ("lilicorr", {"transformers", "dflash", "mlx"}, set()),
])
def test_df009_refuses_exactly_the_engines_without_a_loader(fmt, refused, warned):
    assert verdicts(FAMILY_CONFIGS[fmt]) == {(b, "error") for b in refused} | {(b, "info") for b in warned}


def test_df009_message_names_the_engines_that_do_load_it_and_cites_the_source():
    (f,) = [f for f in run_rule("DF009", target(), FAMILY_CONFIGS["qwen3-xpress"]) if f.backend == "sglang"]
    assert "SGLang does not load Qwen3-XPress" in f.message and "vLLM loads it" in f.message
    assert "sglang 0.5.23 sglang/srt/models/dflash.py:1317-1324" in f.message


def test_df009_assistant_loads_natively_and_not_in_the_reference():
    verdict = verdicts(FAMILY_CONFIGS["muse-glimmer-assistant"])
    assert not {("transformers", "error"), ("transformers", "info")} & verdict
    assert ("dflash", "info") in verdict
    (f,) = [f for f in run_rule("DF009", target(), FAMILY_CONFIGS["muse-glimmer-assistant"]) if f.backend == "dflash"]
    assert "run it with backend `transformers`" in f.message


def test_df009_only_reports_the_backends_asked_for():
    got = run_rule("DF009", target(), FAMILY_CONFIGS["qwen3-xpress"], backends=("vllm",))
    assert got == []


def test_df009_assistant_needs_the_202048_vocabulary_on_vllm():
    assistant = FAMILY_CONFIGS["muse-glimmer-assistant"]
    assert ("vllm", "error") in verdicts(assistant)  # the Qwen3 target has 151936 tokens
    assert ("vllm", "error") not in verdicts(assistant, target(vocab_size=202048))
    assert ("vllm", "error") not in verdicts(merge(assistant, vocab_size=151936))


def test_df009_assistant_sliding_layers_need_is_causal_on_sglang():
    assistant = FAMILY_CONFIGS["muse-glimmer-assistant"]
    assert ("sglang", "warning") in verdicts(assistant)
    assert ("sglang", "warning") not in verdicts(merge(assistant, is_causal=False))


def test_df009_is_silent_for_unknown_families():
    assert verdicts(merge(FAMILY_CONFIGS["zlab-v1"], architectures=["DFlash3DraftModel"])) == set()


def test_every_family_has_a_verdict_for_every_backend():
    for fmt in FAMILIES:
        if fmt == "unknown":
            continue
        for backend in FAMILY_BACKENDS:  # llama.cpp: its converter decides (DF814)
            s = family_support(fmt, backend)
            assert s is not None and s.sources, (fmt, backend)
            assert s.loads or s.reason, (fmt, backend)
        assert [s.engine for s in engines_loading(fmt)], fmt


def test_every_source_names_a_released_engine_and_a_line():
    data = json.loads(DATA.read_text())
    for engines in data["families"].values():
        for entry in engines.values():
            for s in entry["sources"] + [x for c in entry.get("checks", ()) for x in c["sources"]]:
                assert s["engine"] in newest_versions(), s
                assert all(p.isdigit() for p in s["lines"].split("-")), s


def test_every_citation_is_found_in_the_release_it_was_typed_against():
    """Each source is an anchor resolved per bundled release (docs/engine-facts.md); it is found at the release
    its lines were typed against (its own `version`, else the release the file was written against) with
    those lines."""
    typed = {"vllm": "0.33.0", "sglang": "0.5.23", "dflash": "0.1.0", "mlx-lm": "0.32.2", "transformers": "5.24.0",
             "speculators": "0.9.0"}
    for src in all_sources():
        release, lines = src.at(src.version or typed[src.engine])
        assert lines is not None, (src, release)
        first, last = int(src.lines.split("-")[0]), int(src.lines.split("-")[-1])
        assert first <= int(lines.split("-")[0]) and int(lines.split("-")[-1]) <= last, (src, release, lines)


def test_df301_and_df009_never_report_the_same_draft_twice_on_vllm():
    # DF009 judges a known family per engine; DF301 judges the architecture name vLLM is asked for.
    minimax = FAMILY_CONFIGS["minimax-dflash2"]  # a known family vLLM registers no class for
    assert ("vllm", "error") in verdicts(minimax)
    assert not run_rule("DF301", target(), minimax, backends=("vllm",))
    unknown = merge(FAMILY_CONFIGS["zlab-v1"], architectures=["DFlash3DraftModel"])  # no family at all
    assert not [f for f in run_rule("DF009", target(), unknown) if f.backend == "vllm"]
    assert [f.code for f in run_rule("DF301", target(), unknown, backends=("vllm",))] == ["DF301"]


# The hand-verified family verdicts (draft_families.json) against the facts the extractor reads from the
# registries (engine_support.json, `python -m dflash_compat.enginefacts refresh`), where both speak:
# the families told apart by their architecture name (Domino, speculators and unknown drafts are not).
NAMED = {fmt: f.architectures for fmt, f in FAMILIES.items() if f.architectures and f.layout == "zlab"}


@pytest.mark.parametrize("fmt", sorted(NAMED))
def test_draft_families_agree_with_the_extracted_registries(fmt):
    facts = [draft_support(a) for a in NAMED[fmt]]  # the newest bundled releases
    vllm, sglang = family_support(fmt, "vllm"), family_support(fmt, "sglang")
    assert vllm.loads == any(f["vllm"]["loads"] for f in facts), fmt
    assert sglang.loads == any(f["sglang"]["loads"] for f in facts), fmt
    # the runner notes describe vLLM 0.33, the last release with a V1 runner
    facts = [draft_support(a, {"vllm": "0.33.0"}) for a in NAMED[fmt]]
    if vllm.loads and any(f["vllm"]["loads"] for f in facts):
        # "V2 model runner only" exactly where vLLM's V1 runner refuses the class, with the speculator it names
        assert ("V2 model runner only" in vllm.runner) == any(f["vllm"]["v1_refuses"] for f in facts), fmt
        speculators = {f["vllm"]["v2_speculator"] for f in facts} - {None}
        assert speculators and all(s in vllm.runner for s in speculators), (fmt, speculators)
    # The dflash package (the transformers reference and the MLX port) builds only the classes it defines.
    by_dflash = any(f["dflash"]["loads"] for f in facts)
    assert family_support(fmt, "mlx").loads == by_dflash, fmt
    cls = family_support(fmt, "dflash").cls or ""
    assert cls.startswith("dflash.") == by_dflash == (fmt in DFLASH_PACKAGE_FORMATS), (fmt, cls)
