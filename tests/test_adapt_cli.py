"""`dflash-check adapt` end to end: before / after checks, the generated shim, smoke through --adapter, hostile input."""

from __future__ import annotations

import ast
import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402

from dflash_compat.cli.app import cli  # noqa: E402
from tests.adapter_models import one_thread, reference_greedy, save_pair  # noqa: E402

PROMPT = [1, 2, 3, 4, 5, 6]
TARGETS = ["gpt2", "gpt_neox", "opt", "llava"]

_one_thread = pytest.fixture(scope="module", autouse=True)(one_thread)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def report(*args):
    res = run(*args, "-f", "json")
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(res.stdout)


def adapter_findings(rep):
    """Findings whose fix is `dflash-check adapt`: what a shim is meant to fix."""
    return [f for f in rep["findings"] if "dflash-check adapt" in (f.get("fix") or "")]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adapt")
    return {name: save_pair(tmp, name) for name in TARGETS}


@pytest.mark.parametrize("name", TARGETS)
def test_check_fails_then_adapt_then_check_and_smoke_pass(pairs, tmp_path, name):
    model, target, draft = pairs[name]
    # before: the module rules report what the layout breaks, and their fix is this command
    _, before = report(target, "--draft", draft, "-b", "dflash")
    assert adapter_findings(before), before["findings"]

    shim = tmp_path / "adapter.py"
    res = run("adapt", target, "-o", shim)
    assert res.exit_code == 0, res.output
    assert "wrote" in res.stderr and shim.is_file()
    source = shim.read_text()
    ast.parse(source)
    assert "wrap(" in ast.get_docstring(ast.parse(source))

    # the shim imports and exposes the standard names on the real model
    from dflash_compat.adapters.loading import load_shim_file

    wrapped = load_shim_file(str(shim)).wrap(model)
    assert wrapped.model.layers is wrapped.layers and len(wrapped.layers) == model.config.get_text_config().num_hidden_layers
    assert wrapped.get_input_embeddings().weight.shape[1] == model.config.get_text_config().hidden_size

    # after: the checker sees the adapted model
    code, after = report(target, "--draft", draft, "-b", "dflash", "--adapter", shim)
    assert code == 0 and not adapter_findings(after), after["findings"]
    assert after["target"]["deep"]["adapter"] == str(shim)

    # and smoke through the shim is the target's own greedy output
    res = run("smoke", target, "--draft", draft, "--adapter", shim, "--prompt-ids", ",".join(map(str, PROMPT)),
              "--max-new-tokens", 16, "-f", "json")
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["summary"]["lossless"] is True
    assert payload["results"][0]["output_tokens"] == reference_greedy(model, PROMPT, 16)


def test_builtin_adapter_by_name_for_check_and_smoke(pairs):
    model, target, draft = pairs["gpt2"]
    code, rep = report(target, "--draft", draft, "-b", "dflash", "--adapter", "gpt2")
    assert code == 0 and not adapter_findings(rep)
    res = run("smoke", target, "--draft", draft, "--adapter", "gpt2", "--prompt-ids", "1,2,3", "--max-new-tokens", 8,
              "-f", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["results"][0]["output_tokens"] == reference_greedy(model, [1, 2, 3], 8)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_reference_package_fails_on_opt_projections_and_works_through_the_shim(pairs, tmp_path):
    """The dflash package (a test oracle only) embeds with get_input_embeddings().weight: OPT-350m's
    table is narrower than the decoder, so it fails; through the shim it is lossless."""
    pytest.importorskip("dflash.model")
    from dflash_compat.adapters.loading import load_shim_file
    from tests.tiny_dflash import reference_generate

    model, target, draft = pairs["opt"]
    with pytest.raises(RuntimeError):
        reference_generate(draft, model, PROMPT, 8)
    shim = tmp_path / "adapter.py"
    assert run("adapt", target, "-o", shim).exit_code == 0
    tokens, _ = reference_generate(draft, load_shim_file(str(shim)).wrap(model), PROMPT, 16)
    assert tokens == reference_greedy(model, PROMPT, 16)


def test_register_makes_automodel_return_the_adapted_model(pairs, tmp_path):
    from transformers import AutoModelForCausalLM, GPT2Config

    from dflash_compat.adapters.loading import load_shim_file

    _, target, _ = pairs["gpt2"]
    shim = tmp_path / "adapter.py"
    assert run("adapt", target, "-o", shim).exit_code == 0
    module = load_shim_file(str(shim))
    module.register()
    try:
        loaded = AutoModelForCausalLM.from_pretrained(str(target))
        assert isinstance(loaded, module.DFlashAdapted) and loaded.model.embed_tokens is loaded.target.transformer.wte
    finally:
        AutoModelForCausalLM._model_mapping._extra_content.pop(GPT2Config, None)
    assert not isinstance(AutoModelForCausalLM.from_pretrained(str(target)), module.DFlashAdapted)


def test_adapt_prints_to_stdout_and_never_overwrites(pairs, tmp_path):
    _, target, _ = pairs["gpt2"]
    res = run("adapt", target)
    assert res.exit_code == 0
    compile(res.stdout, "adapter.py", "exec")
    out = tmp_path / "adapter.py"
    out.write_text("# keep me\n")
    res = run("adapt", target, "-o", out)
    assert res.exit_code == 2 and "--force" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert out.read_text() == "# keep me\n"
    assert run("adapt", target, "-o", out, "--force").exit_code == 0 and "PATHS" in out.read_text()


@pytest.mark.parametrize("bad", [
    ["--map", 'embed=__import__("os").system("touch PWNED")'],  # PWNED: an absolute path under tmp_path
    ["--map", "embed=os.system('x')"],
    ["--map", "embed=transformer.__class__"],
    ["--map", "embed=a\nimport os"],
    ["--map", 'embed=a"b'],
    ["--map", "exec=transformer.wte"],
    ["--map", "embed"],
])
def test_hostile_map_is_refused_in_one_line(pairs, tmp_path, bad):
    _, target, _ = pairs["gpt2"]
    out = tmp_path / "adapter.py"
    bad = [b.replace("PWNED", str(tmp_path / "pwned")) for b in bad]
    res = run("adapt", target, "-o", out, *bad)
    assert res.exit_code == 2
    assert res.stderr.startswith("dflash-check: error:") and len(res.stderr.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "pwned").exists()


def test_map_file_and_map_override(pairs, tmp_path):
    _, target, _ = pairs["gpt2"]
    mf = tmp_path / "roles.toml"
    mf.write_text('[map]\nembed = "transformer.wte"\nlayers = "transformer.h"\nnorm = "transformer.ln_f"\n')
    res = run("adapt", target, "--map-file", mf, "--map", "lm_head=lm_head")
    assert res.exit_code == 0, res.output
    consts = {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(res.stdout).body
              if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "PATHS"}
    assert consts["PATHS"] == {"embed": "transformer.wte", "layers": "transformer.h", "norm": "transformer.ln_f",
                               "lm_head": "lm_head"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"embed": "__builtins__"}))
    res = run("adapt", target, "--map-file", bad)
    assert res.exit_code == 2 and "dunder" in res.stderr


def test_hostile_config_values_never_reach_the_code(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    evil = {"model_type": f'gpt2"""\nimport os; os.system("touch {tmp_path / "pwned"}")\n"""',
            "architectures": ["X; import os"],
            "hidden_size": 32, "num_hidden_layers": 2, "vocab_size": 32}
    (folder / "config.json").write_text(json.dumps(evil))
    res = run("adapt", folder, "--map", "embed=transformer.wte", "--map", "layers=transformer.h")
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1 and "model_type" in res.stderr
    assert not (tmp_path / "pwned").exists()
    # an unknown layout and no --map: one line that says what to pass
    plain = tmp_path / "unknown"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps({"model_type": "no_such_model", "hidden_size": 32}))
    res = run("adapt", plain)
    assert res.exit_code == 2 and "--map embed=PATH" in res.stderr


def test_bad_adapter_arguments_are_one_line_errors(pairs, tmp_path):
    _, target, draft = pairs["gpt2"]
    not_a_shim = tmp_path / "mine.py"
    not_a_shim.write_text("x = 1\n")
    raises = tmp_path / "boom.py"
    raises.write_text("raise RuntimeError('boom')\n")
    mlx_shim = tmp_path / "mlx_adapter.py"
    assert run("adapt", target, "--framework", "mlx", "-o", mlx_shim).exit_code == 0
    res = run(target, "--draft", draft, "--adapter", "gpt2", "--no-deep")
    assert res.exit_code == 2 and "--no-deep" in res.stderr
    for adapter, text in ((tmp_path / "missing.py", "no such file"), (not_a_shim, "not an adapter shim"),
                          (raises, "importing it failed"), (mlx_shim, "mlx shim"), ("nope", "no built-in")):
        res = run(target, "--draft", draft, "-b", "transformers", "--adapter", adapter)
        assert res.exit_code == 2 and text in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.output


def test_mlx_check_before_and_after_the_mlx_shim(tmp_path):
    pytest.importorskip("mlx_lm")
    from tests import mlx_models
    from tests.adapter_models import MLX_CONFIGS, mlx_draft_config

    cfg = MLX_CONFIGS["gpt_neox"]
    target = mlx_models.save_target(tmp_path / "neox-mlx", mlx_models.build_target(cfg), cfg)
    draft = mlx_models.save_draft(tmp_path / "draft", mlx_draft_config(), seed=1)
    code, before = report(target, "--draft", draft, "-b", "mlx", "--framework", "mlx")
    assert code == 1 and adapter_findings(before)
    shim = tmp_path / "adapter.py"
    res = run("adapt", target, "-o", shim)  # --framework auto: an mlx-format checkpoint gets an MLX shim
    assert res.exit_code == 0 and "(mlx)" in res.stderr, res.output
    code, after = report(target, "--draft", draft, "-b", "mlx", "--framework", "mlx", "--adapter", shim)
    assert code == 0 and not adapter_findings(after), after["findings"]
    # smoke on the MLX runtime: through the shim, and with the built-in adapter chosen by model_type
    for extra in (["--adapter", shim], []):
        res = run("smoke", target, "--draft", draft, "--backend", "mlx", "--prompt-ids", "1,2,3,4,5",
                  "--max-new-tokens", 12, "-f", "json", *extra)
        assert res.exit_code == 0, res.output
        payload = json.loads(res.stdout)
        assert payload["summary"]["lossless"] is True
        model = mlx_models.build_target(cfg)  # same seed: the saved weights
        assert payload["results"][0]["output_tokens"] == mlx_models.mlx_lm_greedy(model, [1, 2, 3, 4, 5], 12)


def _consts(source: str) -> dict:
    return {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(source).body
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id in ("FRAMEWORK", "MODEL_TYPE", "ARCHITECTURE", "PATHS")}


def _llama_folder(tmp_path, **changes):
    from tests.deep_helpers import TINY

    folder = tmp_path / "llama"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(dict(TINY["llama"], **changes)))
    return folder


def test_architecture_must_be_a_transformers_class(tmp_path):
    res = run("adapt", _llama_folder(tmp_path, architectures=["os"]))
    assert res.exit_code == 0, res.output
    consts = _consts(res.stdout)
    assert consts["ARCHITECTURE"] is None  # `os` is a module transformers imports, not a model class
    doc = ast.get_docstring(ast.parse(res.stdout))
    assert "ARCHITECTURE: unknown" in doc and "from transformers import AutoModelForCausalLM" in doc
    ok = run("adapt", _llama_folder(tmp_path / "ok", architectures=["LlamaForCausalLM"]))
    assert _consts(ok.stdout)["ARCHITECTURE"] == "LlamaForCausalLM"


def test_llama_shim_gets_its_final_norm_from_the_inspection(tmp_path):
    res = run("adapt", _llama_folder(tmp_path))
    assert res.exit_code == 0, res.output
    assert _consts(res.stdout)["PATHS"] == {"embed": "model.embed_tokens", "layers": "model.layers",
                                            "norm": "model.norm", "lm_head": "lm_head"}


def test_map_to_a_path_the_model_lacks_is_refused_naming_the_closest(pairs, tmp_path):
    _, target, _ = pairs["gpt2"]
    out = tmp_path / "adapter.py"
    res = run("adapt", target, "-o", out, "--map", "embed=transformer.wtee", "--map", "layers=transformer.h")
    assert res.exit_code == 2 and not out.exists()
    assert res.stderr.splitlines() == [
        "dflash-check: error: --map embed=transformer.wtee: GPT2LMHeadModel has no such module (built without "
        "weights); closest paths: transformer.wte, transformer.wpe"] or (
        len(res.stderr.splitlines()) == 1 and "closest paths: transformer.wte" in res.stderr), res.stderr
    ok = run("adapt", target, "-o", out, "--map", "embed=transformer.wte", "--map", "layers=transformer.h")
    assert ok.exit_code == 0 and "not validated" not in ok.stderr, ok.output


def test_map_is_written_with_a_warning_when_the_tree_cannot_be_built(tmp_path):
    folder = tmp_path / "unknown"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "no_such_model", "hidden_size": 32,
                                                    "num_hidden_layers": 2, "vocab_size": 32}))
    res = run("adapt", folder, "--map", "embed=backbone.tok", "--map", "layers=backbone.blocks")
    assert res.exit_code == 0, res.output
    assert "dflash-check: warning: --map paths not validated: the module tree could not be built" in res.stderr
    assert "backbone.blocks" in res.stdout


def test_map_paths_are_checked_in_an_mlx_tree(tmp_path):
    pytest.importorskip("mlx_lm")
    from dflash_compat.inspection.tree_paths import check_paths
    from dflash_compat.pipeline.check import load_target
    from dflash_compat.resolve.refs import resolve
    from tests.adapter_models import MLX_CONFIGS

    folder = tmp_path / "neox"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(MLX_CONFIGS["gpt_neox"]))
    resolved = resolve(str(folder), "target")
    found = check_paths(resolved, load_target(resolved), "mlx", ["model.embed_in", "model.h",
                                                                 "model.embed_inn"])
    assert list(found.missing) == ["model.embed_inn"]
    assert found.missing["model.embed_inn"][0] == "model.embed_in"
