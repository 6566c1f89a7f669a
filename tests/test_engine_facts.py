"""The engine's contract with the deep facts: typed, frozen, misspellings fail, and every selected
rule's fate (ran / skipped / not-applicable) is recorded with the fact it lacked."""

from __future__ import annotations

import dataclasses

import pytest

from dflash_compat.checker import Rule, RuleContext, Violation, check_rules
from dflash_compat.modelfacts import DraftWeights, ModuleFacts, ModulePaths, Skipped
from dflash_compat.rules import ALL_RULES, RULES_BY_CODE
from dflash_compat.specs import parse_draft_config, parse_target_config
from tests.configs import draft, target

T, D = parse_target_config(target(), "t"), parse_draft_config(draft(), "d")
TREE = ModuleFacts(framework="torch", model_class="X", paths=ModulePaths(embed="model.embed_tokens", layers="l"))


def _rule(**changes) -> Rule:
    base = dict(code="DF999", name="x", severity="error", backends=("transformers",),
                check=lambda ctx: [Violation(f"embed at {ctx.tree.paths.embed}")], what="w", why="y", example="e",
                fix="f", needs=("torch-modules",))
    return Rule(**{**base, **changes})


def test_a_misspelt_fact_name_fails():
    with pytest.raises(ValueError, match="modulse"):
        _rule(needs=("modulse",))
    with pytest.raises(AttributeError):
        TREE.paths.embd  # noqa: B018 - attribute access, not a dict lookup that would read as "absent"
    with pytest.raises(KeyError):
        RuleContext(target=T, draft=D).missing("weight")


def test_facts_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        TREE.paths.embed = "elsewhere"


@pytest.mark.parametrize("modules, status, reason", [
    (None, "skipped", "the target's modules were not inspected (--no-deep)"),
    (Skipped("torch-missing", "torch is not installed", "torch"), "skipped",
     "the target's modules were not inspected (torch-missing)"),
    (dataclasses.replace(TREE, framework="mlx"), "skipped",
     "the target's modules were inspected with mlx-lm, not transformers"),
    (TREE, "ran", None),
])
def test_each_rule_records_why_it_did_or_did_not_run(modules, status, reason):
    results = check_rules(RuleContext(target=T, draft=D, modules=modules), [_rule()], ["transformers", "vllm"])
    (run,) = results.rules
    assert (run.status, run.reason) == (status, reason)
    assert run.missing == (None if status == "ran" else "torch-modules")
    assert [f.message for f in results.findings] == (["embed at model.embed_tokens"] if status == "ran" else [])
    assert results.counts["transformers"].rules_skipped == (status == "skipped")
    assert results.counts["vllm"].rules_ran == results.counts["vllm"].rules_skipped == 0  # does not apply there


def test_a_rule_for_no_selected_backend_is_not_applicable():
    (run,) = check_rules(RuleContext(target=T, draft=D, modules=TREE), [_rule()], ["vllm"]).rules
    assert run.status == "not-applicable"


def test_weight_facts_and_their_skips():
    w = DraftWeights(files=("model.safetensors",), tensor_count=1, shapes={"fc.weight": [4, 8]})
    ctx = RuleContext(target=T, draft=D, weights=w)
    assert ctx.has("weights") and ctx.headers.shapes["fc.weight"] == [4, 8] and ctx.weights_skip is None
    skipped = RuleContext(target=T, draft=D, weights=Skipped("pickle-only", "only .bin files"))
    assert skipped.missing("weights") == "the draft's weight headers were not read (pickle-only)"
    assert skipped.weights_skip.reason == "pickle-only"
    with pytest.raises(LookupError):
        skipped.headers  # noqa: B018


def test_a_tree_that_could_not_be_read_is_not_module_facts():
    broken = dataclasses.replace(TREE, paths=None, skipped=Skipped("inspection-failed", "locating failed", "torch"))
    ctx = RuleContext(target=T, draft=D, modules=broken)
    assert not ctx.has("modules") and ctx.module_skip.reason == "inspection-failed"
    with pytest.raises(LookupError):
        ctx.tree  # noqa: B018


def test_every_registered_rule_needs_only_known_facts_and_reads_them_by_attribute():
    # the registry builds: Rule.__post_init__ has checked every `needs`
    assert all(isinstance(r, Rule) for r in ALL_RULES)
    deep = [r.code for r in ALL_RULES if r.needs]
    assert "DF251" in deep and RULES_BY_CODE["DF251"].needs == ("torch-modules",)
    assert RULES_BY_CODE["DF510"].needs == ("mlx-modules",) and RULES_BY_CODE["DF601"].needs == ("weights",)
