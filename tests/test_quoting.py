"""Messages quote config values through dflash_compat.quoting: short values read as repr() would print
them, long ones are cut (issue 15: 50,000 layer ids copied into every message took 173 s to render)."""

from __future__ import annotations

import pytest

from dflash_compat.checker import BACKENDS, RuleContext, run_rules
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.quoting import quote, quote_items
from dflash_compat.rules import ALL_RULES
from dflash_compat.specs import parse_draft_config, parse_target_config
from tests.configs import draft, speculators_draft, target

BIG = 50_000
LONG = "x" * 100_000


@pytest.mark.parametrize("value", [[1, 9, 17], ["Qwen3ForCausalLM"], "silu", {"a": [1, 2], "b": None}, (1,), (),
                                   1.5, None, True, 151645, {3, 1}, [[1, [2]]]])
def test_short_values_read_as_repr(value):
    assert quote(value) == repr(value)


def test_long_values_are_cut():
    assert quote(list(range(BIG))) == "[0, 1, 2, 3, 4, 5, 6, 7, ... (49992 more)]"
    assert quote(LONG).endswith("... (99880 more characters)") and len(quote(LONG)) < 200
    assert quote({str(i): i for i in range(BIG)}).endswith(", ... (49992 more)}")
    assert quote(10**4000).startswith("<an integer of about")  # str() would refuse it
    assert quote([[[[["deep"]]]]]) == "[[[[...]]]]"
    assert quote_items(range(20)) == "0, 1, 2, 3, 4, 5, 6, 7, ... (12 more)"


def _huge_pair():
    """Every list or string a rule quotes, 50,000 items / 100,000 characters long."""
    ids = list(range(BIG))
    t = target(
        architectures=[LONG] * BIG, model_type=LONG, quantization_config={"quant_method": LONG, "lm_head": True},
        auto_map={f"Auto{i}": LONG for i in range(BIG)}, model_file=LONG,
        rope_scaling={"rope_type": LONG, "mrope_section": ids},
        eos_token_id=ids, layer_types=[LONG] * 36, sliding_window=4096,
    )
    d = draft(**{
        "architectures": [LONG] * BIG, "hidden_act": LONG, "layer_types": [LONG + str(i) for i in range(5)],
        "dflash_config.target_layer_ids": ids + ids + [LONG, -1, -2] * 1000, "rope_scaling": {"rope_type": LONG + "y",
                                                                                            "mrope_section": ids},
        "eagle_aux_hidden_state_layer_ids": ids, "quantization_config": {"quant_method": LONG},
        "quantization": {"bits": LONG, "group_size": ids, "mode": LONG},
    })
    return t, d


@pytest.mark.parametrize("make_draft", [lambda: _huge_pair()[1], lambda: speculators_draft(
    aux_hidden_state_layer_ids=list(range(BIG)), architectures=[LONG] * BIG,
    speculators_config={"verifier": {"name_or_path": LONG, "architectures": [LONG] * BIG}})])
def test_every_rule_message_stays_short_on_huge_configs(make_draft):
    t_raw, _ = _huge_pair()
    t = parse_target_config(t_raw, "target")
    d = parse_draft_config(make_draft(), "draft")
    findings = run_rules(RuleContext(target=t, draft=d, options=CheckOptions()), ALL_RULES, BACKENDS)
    assert len(findings) > 10
    long = [(f.code, len(f.message)) for f in findings if len(f.message) > 2_000]
    assert not long, long
    assert len(findings) < 200  # one finding per problem, not one per item
