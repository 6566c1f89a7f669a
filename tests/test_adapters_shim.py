"""The shim generator: validation of hostile input, inert output, the template round-trip, writing."""

from __future__ import annotations

import ast
import json
import random
import sys

import pytest

from dflash_compat.adapters import shim
from dflash_compat.adapters.shim import (
    ShimPlan,
    load_map_file,
    parse_map_options,
    render_shim,
    validate_path,
    write_shim,
)
from dflash_compat.exceptions import InputError

GPT2 = {"embed": "transformer.wte", "layers": "transformer.h", "norm": "transformer.ln_f", "lm_head": "lm_head"}

HOSTILE_PATHS = [
    "",
    "a..b",
    ".a",
    "a.",
    "a b",
    'x"y',
    "x'y",
    "x\ny",
    "x\\ny",
    "x;import os",
    "__import__",
    "__import__('os').system('touch /tmp/pwned')",
    "os.system('id')",
    "transformer.__class__",
    "model.__dict__.h",
    "forward.__globals__",
    "__builtins__",
    "_ModelView__x.__init__",
    "lambda",
    "model.class",
    "a" * 201,
    ".".join(["a"] * 17),
    "é",
    "wte\u200b",
    "1abc",
    "a-b",
    '"""',
    "a\x00b",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_paths_are_refused(path):
    with pytest.raises(InputError) as err:
        validate_path(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("path", ["transformer.wte", "model.decoder.project_in", "_orig_mod.model.layers", "h"])
def test_plain_paths_are_accepted(path):
    assert validate_path(path) == path


@pytest.mark.parametrize("value", [123, None, ["a"], {"a": 1}, b"wte"])
def test_non_string_paths_are_refused(value):
    with pytest.raises(InputError):
        validate_path(value)


@pytest.mark.parametrize("role", ["bogus", "__class__", "embed\n", "", "EMBED", 1])
def test_unknown_roles_are_refused(role):
    with pytest.raises(InputError, match="unknown role"):
        ShimPlan("torch", {role: "a", "embed": "e", "layers": "l"}).checked()


def test_map_options_parse_and_refuse():
    assert parse_map_options(("embed=transformer.wte", " layers = transformer.h ")) == {
        "embed": "transformer.wte", "layers": "transformer.h"}
    for bad in (("embed",), ("embed=a", "embed=b"), ("embed=__import__",), ("nope=a",), ("embed=a;b",)):
        with pytest.raises(InputError):
            parse_map_options(bad)


@pytest.mark.parametrize("field, value", [
    ("model_type", 'gpt2"""\nimport os'),
    ("model_type", "gpt2\nx"),
    ("model_type", "a'b"),
    ("architecture", "GPT2LMHeadModel; import os"),
    ("architecture", "__import__"),
    ("architecture", "class"),
    ("source", 'x""" + __import__("os").system("id") + """'),
    ("framework", "jax"),
])
def test_hostile_plan_fields_are_refused(field, value):
    kw = {"framework": "torch", "paths": GPT2, field: value}
    with pytest.raises(InputError):
        render_shim(ShimPlan(**kw))


def test_required_roles_are_checked():
    with pytest.raises(InputError, match="--map layers=PATH"):
        render_shim(ShimPlan("torch", {"embed": "transformer.wte"}))
    with pytest.raises(InputError, match="PyTorch shims only"):
        render_shim(ShimPlan("mlx", {"embed": "e", "layers": "l", "embed_proj": "p"}))


def _module_tree(source):
    tree = ast.parse(source)
    compile(source, "<test>", "exec")
    return tree


@pytest.mark.parametrize("framework", ["torch", "mlx"])
def test_output_is_the_template_with_literal_constants(framework):
    source = render_shim(ShimPlan(framework, GPT2, "gpt2", "GPT2LMHeadModel" if framework == "torch" else None))
    got, want = shim._split_constants(_module_tree(source)), shim._split_constants(ast.parse(shim._template(framework)))
    assert [ast.dump(n) for n in got[0]] == [ast.dump(n) for n in want[0]]
    assert ast.literal_eval(got[1]["PATHS"]) == GPT2
    assert ast.literal_eval(got[1]["FRAMEWORK"]) == framework
    assert "transformer.wte" in ast.get_docstring(ast.parse(source))


def test_code_looking_names_stay_inert_literals():
    # Valid identifiers that look like code: they may only ever appear inside string constants.
    paths = {"embed": "os.system", "layers": "builtins.exec", "norm": "subprocess.run", "lm_head": "eval"}
    source = render_shim(ShimPlan("torch", paths, "gpt2", "GPT2LMHeadModel"))
    tree = _module_tree(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not {"os", "builtins", "subprocess"} & names
    assert not {"system", "run"} & attrs
    assert not any(isinstance(n, ast.Import) and any(a.name in ("os", "subprocess") for a in n.names)
                   for n in ast.walk(tree))
    assert ast.literal_eval(shim._split_constants(tree)[1]["PATHS"]) == paths


def test_importing_a_shim_with_code_looking_paths_runs_nothing(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import os
    import subprocess

    calls = []
    monkeypatch.setattr(os, "system", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a))
    paths = {"embed": "os.system", "layers": "subprocess.run", "lm_head": "eval"}
    path = write_shim(render_shim(ShimPlan("torch", paths)), tmp_path / "adapter.py")
    from dflash_compat.adapters.loading import load_shim_file

    module = load_shim_file(str(path))
    assert module.PATHS == paths and calls == []

    class Plain:  # has none of those attributes: wrap() must refuse, not run anything
        def forward(self, input_ids=None):
            return None

    with pytest.raises(AttributeError, match="regenerate"):
        module.wrap(Plain())
    assert calls == []


def test_random_strings_either_refused_or_round_trip():
    rng = random.Random(0)
    alphabet = "abcxyz_.0 \"'\\\n\t;()[]{}#=+-*/<>!@$%^&|~`é\x00"
    accepted = 0
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        try:
            source = render_shim(ShimPlan("torch", {"embed": text, "layers": "h"}))
        except InputError:
            continue
        accepted += 1
        tree = _module_tree(source)
        assert ast.literal_eval(shim._split_constants(tree)[1]["PATHS"])["embed"] == text
    assert accepted > 0  # some plain ones (e.g. "a_b.c") got through and round-tripped


def test_the_template_itself_is_a_valid_passthrough():
    for fw in ("torch", "mlx"):
        compile(shim._template(fw), fw, "exec")


def test_write_never_overwrites_without_force(tmp_path):
    source = render_shim(ShimPlan("torch", GPT2))
    out = tmp_path / "adapter.py"
    write_shim(source, out)
    out.write_text("# mine\n")
    with pytest.raises(InputError, match="--force"):
        write_shim(source, out)
    assert out.read_text() == "# mine\n"
    write_shim(source, out, force=True)
    assert out.read_text() == source
    assert [p.name for p in tmp_path.iterdir()] == ["adapter.py"]  # no temp file left behind


@pytest.mark.parametrize("name", ["adapter.txt", "sub"])
def test_write_refuses_bad_targets(tmp_path, name):
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError):
        write_shim(render_shim(ShimPlan("torch", GPT2)), tmp_path / name)
    with pytest.raises(InputError, match="does not exist"):
        write_shim(render_shim(ShimPlan("torch", GPT2)), tmp_path / "missing" / "a.py")


def test_map_files_json_and_toml(tmp_path):
    j = tmp_path / "m.json"
    j.write_text(json.dumps({"map": GPT2}))
    assert load_map_file(j) == GPT2
    if sys.version_info >= (3, 11):
        t = tmp_path / "m.toml"
        t.write_text('embed = "transformer.wte"\nlayers = "transformer.h"\n')
        assert load_map_file(t) == {"embed": "transformer.wte", "layers": "transformer.h"}
    for name, text in (("bad.json", "{"), ("list.json", "[1]"), ("hostile.json", json.dumps({"embed": "__import__"})),
                       ("role.json", json.dumps({"exec": "a"})), ("num.json", json.dumps({"embed": 3})),
                       ("bad.toml", "embed = "), ("m.yaml", "embed: a")):
        (tmp_path / name).write_text(text)
        with pytest.raises(InputError):
            load_map_file(tmp_path / name)
    with pytest.raises(InputError, match="cannot read"):
        load_map_file(tmp_path / "missing.json")


@pytest.mark.parametrize("name, text", [
    ("deep.json", "[" * 900_000),
    ("long.json", '{"embed": ' + "9" * 5000 + "}"),
    ("deep.toml", "embed = " + "[" * 200_000),
])
def test_hostile_map_files_are_one_line_input_errors(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError) as err:
        load_map_file(tmp_path / name)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_torch_shim_adapts_a_custom_layout_forward(tmp_path):
    """A model no table knows, with a bare forward (no position_ids, logits_to_keep or hidden
    states) and tuple-returning blocks: the shim from --map gives the full contract."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from torch import nn
    from transformers.modeling_outputs import CausalLMOutputWithPast

    from dflash_compat.adapters.loading import load_shim_file

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return (x + torch.tanh(self.lin(x)), None)  # a tuple, like transformers 4.x layers

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(16, 8)
            self.blocks = nn.ModuleList([Block() for _ in range(3)])

    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone, self.head = Backbone(), nn.Linear(8, 16, bias=False)

        def forward(self, input_ids, past_key_values=None, use_cache=None):
            h = self.backbone.tok(input_ids)
            for block in self.backbone.blocks:
                h = block(h)[0]
            return CausalLMOutputWithPast(logits=self.head(h), past_key_values=past_key_values)

    paths = parse_map_options(("embed=backbone.tok", "layers=backbone.blocks", "lm_head=head"))
    module = load_shim_file(str(write_shim(render_shim(ShimPlan("torch", paths)), tmp_path / "adapter.py")))
    torch.manual_seed(0)
    model = Custom().eval()
    wrapped = module.wrap(model)
    ids = torch.tensor([[1, 2, 3, 4]])
    marker = object()
    out = wrapped(ids, position_ids=torch.arange(4)[None], past_key_values=marker, use_cache=True,
                  logits_to_keep=1, output_hidden_states=True)
    full = model(ids).logits
    torch.testing.assert_close(out.logits, full[:, -1:])
    assert out.past_key_values is marker
    assert len(out.hidden_states) == 4 and out.hidden_states[0].shape == (1, 4, 8)
    h = model.backbone.tok(ids)
    for i, block in enumerate(model.backbone.blocks):
        h = block(h)[0]
        torch.testing.assert_close(out.hidden_states[i + 1], h)
    assert wrapped.model.embed_tokens is model.backbone.tok and wrapped.lm_head is model.head
    assert wrapped.get_submodule("model.layers") is model.backbone.blocks
    assert not [h for b in model.backbone.blocks for h in b._forward_hooks.values()]  # hooks removed
