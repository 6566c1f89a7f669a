"""DF208 (a target whose forward prepends its own prompt: cpmant on the dflash reference) and DF520 (mlx-lm's
Gemma 3 text model indexing its cache past the last layer): found by the zoo truth benchmark."""

from __future__ import annotations

from tests.configs import catches, draft, run_rule, target


def _cpmant(**changes):
    return target(model_type="cpmant", architectures=["CpmAntForCausalLM"], prompt_length=32, prompt_types=32,
                  **changes)


def test_df208_catches_cpmant_for_the_dflash_reference():
    [f] = run_rule("DF208", _cpmant(), draft(), backends=("dflash",))
    assert "prepends 32 virtual prompt positions" in f.message
    assert "dflash/model.py" in f.message


def test_df208_passes_a_standard_causal_lm_and_other_backends():
    assert not catches("DF208", target(), draft())
    assert not run_rule("DF208", _cpmant(), draft(), backends=("transformers", "mlx"))


def _gemma(**changes):
    return target(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], **changes)


def test_df520_catches_a_gemma3_text_target_with_fewer_layers_than_the_default_pattern():
    [f] = run_rule("DF520", _gemma(num_hidden_layers=4, _sliding_window_pattern=6), draft(), backends=("mlx",))
    assert "cache[5]" in f.message and "IndexError" in f.message
    assert catches("DF520", _gemma(num_hidden_layers=8, sliding_window_pattern=9), draft(), backends=("mlx",))


def test_df520_passes_enough_layers_an_explicit_pattern_other_types_and_torch_backends():
    assert not catches("DF520", _gemma(num_hidden_layers=26), draft(), backends=("mlx",))
    assert not catches("DF520", _gemma(num_hidden_layers=4, sliding_window_pattern=2), draft(), backends=("mlx",))
    assert not catches("DF520", target(num_hidden_layers=4), draft(), backends=("mlx",))
    assert not run_rule("DF520", _gemma(num_hidden_layers=4), draft(), backends=("dflash", "transformers"))


def test_smoke_preflight_refuses_cpmant_with_df208_and_gemma3_on_mlx_with_df520(tmp_path):
    from dflash_compat.cli.commands.smoke_preflight import preflight
    from tests.configs import write_model

    d = write_model(tmp_path / "draft", draft())
    cpm = write_model(tmp_path / "cpmant", _cpmant())
    assert [f.code for f in preflight(str(cpm), str(d), "torch", deep=False).refusals] == ["DF208"]
    gem = write_model(tmp_path / "gemma", _gemma(num_hidden_layers=4))
    assert "DF520" in [f.code for f in preflight(str(gem), str(d), "mlx", deep=False).refusals]
    assert "DF520" not in [f.code for f in preflight(str(gem), str(d), "torch", deep=False).refusals]
