"""The launch rules DF901-DF911: each catches what it says and lets the corrected launch through."""

from __future__ import annotations

import json

import pytest

from dflash_compat.pipeline.launch import LaunchSettings, check_text
from dflash_compat.rules import RULES_BY_CODE

SPEC = {"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 15}
LLAMA = "llama-server -m t.gguf -md d.gguf --spec-type draft-dflash --spec-draft-n-max 15 --spec-draft-p-min 0.75"


def vllm(spec=None, extra: str = "") -> str:
    return f"vllm serve Qwen/Qwen3-8B --speculative-config '{json.dumps(spec or SPEC)}' {extra}"


def codes(text: str, file: str = "run.sh", **settings) -> list[str]:
    fr = check_text(file, text, LaunchSettings(pair=False, **settings))
    return [f.code for lr in fr.launches for f in lr.report.findings if f.code != "DF910"]


def test_every_launch_rule_is_registered_documented_and_cited():
    for code in [f"DF9{n:02d}" for n in range(1, 12)]:
        rule = RULES_BY_CODE[code]
        assert rule.needs == ("launch",) and rule.what and rule.why and rule.example and rule.fix
    for code in ("DF901", "DF902", "DF903", "DF904", "DF905", "DF906", "DF907"):
        assert RULES_BY_CODE[code].sources, code


@pytest.mark.parametrize("text,bad,good", [
    # DF901: flags a release does not know, or has removed
    (vllm(extra="--tensor-parallel-size 2 --speculative-model x"), ["DF901"], None),
    (LLAMA.replace("--spec-draft-n-max", "--draft-max"), ["DF901"], None),
    (vllm(extra="--tensor_parallel_size 2 --no-enable-prefix-caching --max-num-seq 8 -O3"), [], None),
    (LLAMA + " --model-draft d.gguf -ctkd f16", [], None),
])
def test_df901(text, bad, good):
    assert codes(text) == bad


def test_df901_names_the_release_that_has_the_flag():
    fr = check_text("x", vllm(extra="--shuffle-safetensors-files"), LaunchSettings(
        pair=False, engine_versions={"vllm": "0.33.0"}))
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF901"]
    assert "it exists in vllm 0.34.0" in f.message
    assert codes(vllm(extra="--shuffle-safetensors-files"), engine_versions={"vllm": "0.34.0"}) == []


def test_df902():
    spec = {**SPEC, "disable_padded_drafter_batch": True}
    assert codes(vllm(spec), engine_versions={"vllm": "0.34.0"}) == ["DF902"]
    assert codes(vllm(spec), engine_versions={"vllm": "0.33.0"}) == []
    assert codes("vllm serve T --speculative-config '{\"method\": dflash}'") == ["DF902"]
    assert codes(vllm()) == []


def test_vllm_0_32_flags_are_judged():
    """vLLM 0.32.0's parser is read (its frontend flags live in entrypoints/launchers/cli_args.py):
    `--headless` (0.32.0 vllm/entrypoints/launchers/cli_args.py:435) and `--port` (FrontendArgs,
    :285) pass; `--monokernel`, declared from 0.33.0 on (0.33.0 vllm/engine/arg_utils.py:1842; 0.32.0's
    KernelConfig group, arg_utils.py:1795-1814, has no such flag), is refused; so is the
    --speculative-config key `xpress_topc` (0.33.0 vllm/config/speculative.py:646; 0.32.0's
    SpeculativeConfig, speculative.py:387, has none, and extra keys are forbidden: config/utils.py:71)."""
    at = {"vllm": "0.32.0"}
    assert codes(vllm(extra="--headless --port 8001 --tensor-parallel-size 2"), engine_versions=at) == []
    assert codes(vllm(extra="--monokernel"), engine_versions=at) == ["DF901"]
    assert codes(vllm(extra="--monokernel"), engine_versions={"vllm": "0.33.0"}) == []
    fr = check_text("x", vllm(extra="--monokernel"), LaunchSettings(pair=False, engine_versions=at))
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF901"]
    assert "not an option of vllm 0.32.0 (it exists in vllm 0.33.0, 0.34.0)" in f.message
    assert codes(vllm({**SPEC, "xpress_topc": 4}), engine_versions=at) == ["DF902"]
    assert codes(vllm({**SPEC, "xpress_topc": 4}), engine_versions={"vllm": "0.33.0"}) == []


def test_df903():
    assert codes(vllm({**SPEC, "num_speculative_tokens": 0})) == ["DF903"]
    assert codes(LLAMA.replace("--spec-draft-n-max 15", "--spec-draft-n-max 0")) == ["DF903"]
    assert codes(vllm()) == [] and codes(LLAMA) == []


def test_df904():
    assert codes(LLAMA + " -ctkd q8_0 -ctvd q4_0") == ["DF904", "DF904"]
    assert codes(LLAMA + " -ctkd f16 -ctvd bf16 -ctk q8_0 -ctv q8_0") == []


def test_df905():
    assert codes(LLAMA + " -sm tensor") == ["DF905"]
    assert codes(LLAMA + " -sm layer") == [] and codes("llama-server -m t.gguf -sm tensor") == []


def test_df906():
    old = {"vllm": "0.33.0"}
    assert codes(vllm({**SPEC, "model": "deepseek-ai/dspark_qwen3_8b_block7"}), engine_versions=old) == ["DF906"]
    assert codes(vllm({**SPEC, "method": "dspark", "model": "deepseek-ai/dspark_qwen3_8b_block7"}),
                 engine_versions=old) == []
    assert codes(vllm(), engine_versions=old) == []


def test_launch_rules_keep_their_version_gates():
    """One runner: a launch rule's `versions` gate holds in `launch` as in `check` (DF906 is read for vLLM
    before 0.34.0 only), where the old launch runner ran every launch rule at every release."""
    fr = check_text("run.sh", vllm({**SPEC, "model": "deepseek-ai/dspark_qwen3_8b_block7"}),
                    LaunchSettings(pair=False, engine_versions={"vllm": "0.34.0"}))
    [run] = [r for r in fr.launches[0].report.rules if r.code == "DF906"]
    assert run.status == "not-applicable" and "vllm<0.34.0" in run.reason


def test_df907():
    assert codes(LLAMA.replace(" --spec-draft-p-min 0.75", "")) == ["DF907"]
    assert codes(LLAMA.replace("--spec-draft-p-min", "--draft-p-min")) == []
    fr = check_text("x", LLAMA.replace(" --spec-draft-p-min 0.75", ""), LaunchSettings(
        pair=False, engine_versions={"llama.cpp": "b9000"}))
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF907"]
    assert "defaults to 0.75 (0 from b9235 on)" in f.message


def test_df908():
    twice = vllm() + "\n" + vllm({**SPEC, "num_speculative_tokens": 7}, "--port 8001")
    assert codes(twice) == ["DF908"]
    assert codes(vllm() + "\n" + vllm(extra="--port 8001")) == []
    assert codes(vllm() + "\n" + vllm({**SPEC, "model": "other/draft"}, "--max-num-seqs 8")) == []


def test_df909():
    assert codes(vllm(extra="--tensor-parallel-size $TP")) == ["DF909"]
    assert codes("TP=2\n" + vllm(extra="--tensor-parallel-size $TP")) == []
    fr = check_text("x", vllm(extra="--tensor-parallel-size $TP"), LaunchSettings(pair=False))
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF909"]
    assert f.message == "tp not judged: comes from $TP, which this file does not define" and f.severity == "info"


def test_df910_says_why_the_pair_was_not_checked():
    fr = check_text("x", "vllm serve $MODEL --speculative-config '{\"model\": \"d\"}'", LaunchSettings())
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF910"]
    assert f.message == "the pair was not checked: the target comes from $MODEL"
    fr = check_text("x", LLAMA, LaunchSettings())
    assert [f.code for f in fr.launches[0].report.findings] == ["DF910"]


def test_df911():
    assert codes(vllm(), engine_versions={"vllm": "0.20.0"}) == ["DF911"]
    assert codes(vllm(), engine_versions={"vllm": "0.33.0"}) == []
    assert codes(vllm(), engine_versions={"vllm": "0.32.0"}) == []  # its parser is read too


def test_select_ignore_and_severity_apply():
    text = LLAMA + " -ctkd q8_0 -sm tensor"
    assert codes(text, ignore=["DF904"]) == ["DF905"]
    assert codes(text, select=["DF904"]) == ["DF904"]
    fr = check_text("x", text, LaunchSettings(pair=False, severity={"DF905": "error"}))
    assert {f.code: f.severity for f in fr.launches[0].report.findings}["DF905"] == "error"
    assert fr.launches[0].report.exit_code() == 1


def test_pair_checks_never_run_launch_rules():
    from dflash_compat.checker import RuleContext, check_rules
    from dflash_compat.rules import ALL_RULES
    from dflash_compat.specs import parse_draft_config, parse_target_config
    from tests.configs import draft, target

    ctx = RuleContext(target=parse_target_config(target(), "t"), draft=parse_draft_config(draft(), "d"))
    results = check_rules(ctx, ALL_RULES, ["vllm"])
    assert not [r for r in results.rules if r.code.startswith("DF9")]


def test_dotted_speculative_config_keys_are_read():
    text = ("vllm serve T --speculative-config.method dflash --speculative-config.model z/d "
            "--speculative-config.num_speculative_tokens 0 --speculative-config.bogus_key 1")
    assert codes(text) == ["DF902", "DF903"]
    assert codes(text.replace(" --speculative-config.bogus_key 1", "").replace("tokens 0", "tokens 15")) == []


def test_a_launch_of_another_speculative_method_gets_no_dflash_pair_check():
    fr = check_text("x", "python -m sglang.launch_server --model-path T --speculative-algorithm EAGLE3 "
                         "--speculative-draft-model-path D", LaunchSettings())
    [f] = fr.launches[0].report.findings
    assert f.code == "DF910" and f.message.endswith("the speculative method is 'EAGLE3', not DFlash")


def test_df912_method_names_as_each_release_parses_them():
    """vLLM 0.32.0-0.34.0 match `method` exactly (vllm/config/speculative.py: SpeculativeMethod, a Literal);
    SGLang 0.5.23 upper-cases the algorithm (spec_info.py:50-64); llama.cpp b11434 looks each --spec-type
    name up exactly (common/speculative.cpp:72-84). The rest of the launch is still judged."""
    for version in ("0.32.0", "0.33.0", "0.34.0"):
        at = {"vllm": version}
        assert codes(vllm({**SPEC, "method": "DFlash"}), engine_versions=at) == ["DF912"]
        assert codes(vllm({**SPEC, "method": "dflash2"}), engine_versions=at) == ["DF912"]
        assert codes(vllm(SPEC), engine_versions=at) == []
    fr = check_text("x", vllm({**SPEC, "method": "DFlash"}), LaunchSettings(pair=False))
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF912"]
    assert f.severity == "error" and "vllm/config/speculative.py:90" in f.message and f.fix == 'Write "method": "dflash".'
    # a name like no built-in one: vLLM 0.34.0 takes a plugin's registered method (speculative.py:1623-1634)
    fr = check_text("x", vllm({**SPEC, "method": "my_spec"}), LaunchSettings(pair=False))
    assert [(f.code, f.severity) for f in fr.launches[0].report.findings if f.code != "DF910"] == [("DF912", "warning")]
    assert codes(vllm({**SPEC, "method": "my_spec"}), engine_versions={"vllm": "0.33.0"}) == ["DF912"]
    sglang = "python -m sglang.launch_server --model-path T --speculative-draft-model-path D --speculative-algorithm "
    assert codes(sglang + "dflash") == [] and codes(sglang + "DFlash") == []
    assert codes(sglang + "dflash2") == ["DF912"]
    llama = LLAMA.replace("draft-dflash", "dflash") + " -sm tensor"
    found = codes(llama)
    assert sorted(found) == ["DF905", "DF912"]  # refused, and its split mode still judged as a DFlash launch
    assert codes(LLAMA.replace("draft-dflash", "draft-dflash,ngram-mod")) == []


def test_df913_a_pin_before_dflash_is_an_error_from_the_pin_alone():
    pinned = "pip install 'vllm==0.19.1'\n" + vllm()
    fr = check_text("run.sh", pinned, LaunchSettings())  # the pair is read, and cannot be: the pin decides
    found = {f.code: f for f in fr.launches[0].report.findings}
    assert found["DF913"].severity == "error" and (found["DF913"].locations[0].line,
                                                  found["DF913"].locations[0].column) == (1, 14)
    assert found["DF913"].fix == "Pin vLLM 0.20.0 or later, e.g. vllm==0.34.0." and "DF911" not in found
    image = "docker run vllm/vllm-openai:v0.19.0 --model T --speculative-config '" + json.dumps(SPEC) + "'"
    fr = check_text("run.sh", image, LaunchSettings(pair=False))
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF913"]
    assert f.locations[0].column == image.index("vllm/vllm-openai") + 1
    assert f.fix == "Use an image of vLLM 0.20.0 or later, e.g. vllm/vllm-openai:v0.34.0."
    # no draft: a plain launch of an old release is no DFlash launch
    assert codes("pip install vllm==0.19.1\nvllm serve T\n") == ["DF911"]
    assert codes(vllm(), engine_versions={"vllm": "0.20.0"}) == ["DF911"]  # has DFlash; no flag facts for it


def test_df911_names_the_launch_engine_in_its_fix():
    fr = check_text("x", LLAMA, LaunchSettings(pair=False, engine_versions={"llama.cpp": "b9000"}))
    [f] = [f for f in fr.launches[0].report.findings if f.code == "DF911"]
    assert "vllm" not in f.fix and "--engine-version llama.cpp==b11434" in f.fix
    assert "launch_flags llama.cpp==b9000=LLAMA_CPP_SOURCE_TREE" in f.fix


def test_df910_only_where_there_is_a_pair():
    assert [f.code for f in check_text("x", "vllm serve T --port 1", LaunchSettings()).launches[0].report.findings] \
        == []
    fr = check_text("x", "llama-server -m t.gguf --port 1", LaunchSettings())
    assert fr.launches[0].report.findings == []
