"""`dflash-check convert`: z-lab <-> speculators round trips are byte-identical in every tensor and
equivalent in config; refusals are one line with exit 2 and never touch the user's files."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.files.safetensors_stream import read_tensors
from dflash_compat.specs import parse_draft_config
from tests.deep_helpers import draft_tensors, write_safetensors

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "examples" / "tiny-qwen3"


def convert(*args: str):
    return CliRunner().invoke(cli, ["convert", *map(str, args)])


def tensor_bytes(folder: Path) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    out = {}
    for f in sorted(folder.glob("*.safetensors")):
        for t in read_tensors(f)[1]:
            with open(t.file, "rb") as fh:
                fh.seek(t.start)
                out[t.name] = (t.dtype, t.shape, fh.read(t.nbytes))
    return out


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def contract(folder: Path) -> dict:
    """The draft as every reader sees it: the parsed spec without where each value was written."""
    d = parse_draft_config(json.loads((folder / "config.json").read_text()), "d")
    return d.model_dump(exclude={"source", "sources", "raw", "block_size_locations", "mask_token_id_locations"})


def make_draft(folder: Path, cfg: dict, tensors=None, shards: int = 1) -> Path:
    """A draft folder with random tensor bytes, in one file or `shards` files plus an index."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    tensors = tensors or draft_tensors(BASE)
    names = list(tensors)
    if shards == 1:
        write_safetensors(folder / "model.safetensors", tensors)
        return folder
    wmap = {}
    for i in range(shards):
        part = {n: tensors[n] for n in names[i::shards]}
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(folder / fname, part)
        wmap.update({n: fname for n in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}))
    return folder


BASE = {
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 1000,
    "rms_norm_eps": 1e-6, "max_position_embeddings": 4096, "hidden_act": "silu", "rope_theta": 1e6,
    "num_target_layers": 4, "block_size": 8, "dflash_config": {"mask_token_id": 999, "target_layer_ids": [1, 2]},
}
V2 = dict(BASE, architectures=["DFlash2DraftModel"], layer_types=["sliding_attention"] * 2, sliding_window=64,
          dflash_config=dict(BASE["dflash_config"], block_size=8, conv_kernel_size=2, conv_group_size=16,
                             selector_rank=8, selector_top_k=4))
V2_TENSORS = {**draft_tensors(V2), **{
    f"layers.{i}.{p}.{n}": ("BF16", s) for i in range(2) for p in ("attention_conv", "mlp_conv")
    for n, s in (("base_kernel", [2, 2, 64]), ("kernel_projection.weight", [16, 64]))},
    "candidate_selector.predecessor_codebook": ("BF16", [1000, 8]),
    "candidate_selector.successor_codebook": ("BF16", [1000, 8]),
    "candidate_selector.hidden_projection.weight": ("BF16", [8, 64])}


@pytest.mark.parametrize("name, cfg, tensors, shards", [
    ("tiny-example", None, None, 1),
    ("v1-sharded", BASE, None, 2),
    ("v2-sliding", V2, V2_TENSORS, 1),
])
def test_zlab_speculators_zlab_round_trip_is_byte_identical(tmp_path, name, cfg, tensors, shards):
    src = TINY / "draft" if cfg is None else make_draft(tmp_path / "src", cfg, tensors, shards)
    before = tree_digest(src)
    assert convert(src, "--to", "speculators", "-o", tmp_path / "spec").exit_code == 0
    assert convert(tmp_path / "spec", "--to", "zlab", "-o", tmp_path / "back").exit_code == 0
    assert tree_digest(src) == before  # the input is never written
    assert tensor_bytes(tmp_path / "back") == tensor_bytes(src) == tensor_bytes(tmp_path / "spec")
    assert contract(tmp_path / "back") == contract(src)
    spec = parse_draft_config(json.loads((tmp_path / "spec" / "config.json").read_text()), "s")
    assert spec.target_layer_ids == parse_draft_config(json.loads((src / "config.json").read_text()), "z").target_layer_ids
    if shards > 1:
        index = json.loads((tmp_path / "spec" / "model.safetensors.index.json").read_text())
        assert set(index["weight_map"]) == set(tensor_bytes(src))


def test_speculators_config_follows_the_speculators_conventions(tmp_path):
    assert convert(make_draft(tmp_path / "v2", V2, V2_TENSORS), "--to", "speculators", "-o", tmp_path / "s").exit_code == 0
    cfg = json.loads((tmp_path / "s" / "config.json").read_text())
    assert cfg["speculators_model_type"] == "dflash2" and cfg["architectures"] == ["DFlash2DraftModel"]
    assert cfg["aux_hidden_state_layer_ids"] == [2, 3]  # z-lab ids + 1
    assert cfg["speculators_config"]["proposal_methods"][0]["speculative_tokens"] == 7  # block_size - 1
    assert cfg["sliding_window_non_causal"] is False  # sliding layers, causal in z-lab: vLLM reads causal true
    assert (cfg["conv_kernel_size"], cfg["selector_rank"], cfg["mask_token_id"]) == (2, 8, 999)
    assert "dflash_config" not in cfg and cfg["transformer_layer_config"]["hidden_size"] == 64


def test_last_layer_id_is_kept_and_noted(tmp_path):
    cfg = dict(BASE, dflash_config=dict(BASE["dflash_config"], target_layer_ids=[1, 3]))
    res = convert(make_draft(tmp_path / "d", cfg), "--to", "speculators", "-o", tmp_path / "s")
    assert res.exit_code == 0 and "kept as aux id 4" in res.output
    assert json.loads((tmp_path / "s" / "config.json").read_text())["aux_hidden_state_layer_ids"] == [2, 4]


def test_alias_and_prefix_names_become_zlab_names(tmp_path):
    tensors = {("model." + n).replace("model.fc.", "model.encoder.fc."): v for n, v in draft_tensors(BASE).items()}
    src = make_draft(tmp_path / "d", BASE, tensors)
    assert convert(src, "--to", "speculators", "-o", tmp_path / "s").exit_code == 0
    got = tensor_bytes(tmp_path / "s")
    assert set(got) == set(draft_tensors(BASE))
    assert got["fc.weight"] == tensor_bytes(src)["model.encoder.fc.weight"]


def test_mask_embedding_file_is_copied_as_bytes(tmp_path):
    src = make_draft(tmp_path / "d", BASE)
    (src / "mask_embedding.pt").write_bytes(b"\x80\x02not-opened")
    assert convert(src, "--to", "speculators", "-o", tmp_path / "s").exit_code == 0
    assert (tmp_path / "s" / "mask_embedding.pt").read_bytes() == b"\x80\x02not-opened"


def _speculators(tmp_path: Path, **changes) -> Path:
    src = make_draft(tmp_path / "z", BASE)
    assert convert(src, "--to", "speculators", "-o", tmp_path / "s").exit_code == 0
    cfg = json.loads((tmp_path / "s" / "config.json").read_text())
    cfg.update(changes)
    (tmp_path / "s" / "config.json").write_text(json.dumps(cfg))
    return tmp_path / "s"


@pytest.mark.parametrize("cfg, message", [
    (dict(BASE, layer_types=["sliding_attention", "full_attention"], sliding_window=64), "sliding_window_non_causal"),
    (dict(BASE, dflash_config=dict(BASE["dflash_config"], output_multiplier=0.5)), "output_multiplier 0.5"),
    (dict(BASE, dflash_config={"mask_token_id": 999}), "no target_layer_ids"),
    (dict(BASE, block_size=None), "no block_size"),
    (dict(BASE, dflash_config=dict(BASE["dflash_config"], use_swa=True)), "dflash_config.use_swa"),
    (dict(BASE, eagle_aux_hidden_state_layer_ids=[1, 2]), "eagle_aux_hidden_state_layer_ids"),
    (dict(BASE, architectures=["MuseGlimmerAssistantModel"]), "Muse-Glimmer assistant"),
])
def test_zlab_drafts_the_speculators_format_cannot_describe_are_refused(tmp_path, cfg, message):
    src = make_draft(tmp_path / "d", cfg)
    res = convert(src, "--to", "speculators", "-o", tmp_path / "out")
    assert res.exit_code == 2 and message in res.output and "cannot convert" in res.output
    assert len(res.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["d"]  # no temporary folder left behind


@pytest.mark.parametrize("changes, message", [
    ({"draft_vocab_size": 500}, "draft_vocab_size 500"),
    ({"aux_hidden_state_layer_ids": [0, 2]}, "embedding output"),
    ({"target_hidden_size": 128}, "target_hidden_size 128"),
])
def test_speculators_drafts_the_zlab_format_cannot_describe_are_refused(tmp_path, changes, message):
    res = convert(_speculators(tmp_path, **changes), "--to", "zlab", "-o", tmp_path / "out")
    assert res.exit_code == 2 and message in res.output and not (tmp_path / "out").exists()


def test_vocabulary_maps_are_refused_on_the_way_to_zlab(tmp_path):
    spec = _speculators(tmp_path)
    tensors = {**draft_tensors(BASE), "d2t": ("I8", [1000])}
    (spec / "model.safetensors").unlink()
    write_safetensors(spec / "model.safetensors", tensors)
    res = convert(spec, "--to", "zlab", "-o", tmp_path / "out")
    assert res.exit_code == 2 and "d2t/t2d" in res.output


@pytest.mark.parametrize("setup, out, message", [
    ("exists", "out", "exists; pass --force"),
    ("plain", "d/inside", "inside the input folder"),
    ("plain", ".", "contains the input folder"),
    ("truncated", "out", "truncated"),
    ("pickle", "out", "pickled"),
    ("noconfig", "out", "not a local draft folder"),
])
def test_input_and_output_problems_are_one_line_errors(tmp_path, setup, out, message):
    src = make_draft(tmp_path / "d", BASE)
    if setup == "exists":
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "keep.txt").write_text("mine")
    elif setup == "truncated":
        data = (src / "model.safetensors").read_bytes()
        (src / "model.safetensors").write_bytes(data[:-10])
    elif setup == "pickle":
        (src / "model.safetensors").unlink()
        (src / "pytorch_model.bin").write_bytes(b"x")
    elif setup == "noconfig":
        (src / "config.json").unlink()
    before = tree_digest(tmp_path)
    res = convert(src, "--to", "speculators", "-o", tmp_path / out)
    assert res.exit_code == 2 and message in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert tree_digest(tmp_path) == before


def test_force_replaces_the_output_only_once_the_new_one_is_complete(tmp_path, monkeypatch):
    src = make_draft(tmp_path / "d", BASE)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("old")
    import dflash_compat.files.safetensors_stream as stream

    def broken(*args, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(stream, "write_tensors", broken)
    res = CliRunner().invoke(cli, ["convert", str(src), "--to", "speculators", "-o", str(tmp_path / "out"), "--force"],
                             catch_exceptions=False)
    # an error the code did not expect: one line, exit 3 (internal error), never 1
    assert res.exit_code == 3 and "internal error in convert: OSError: disk full" in res.output
    assert (tmp_path / "out" / "old.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "out"]
    monkeypatch.undo()
    assert convert(src, "--to", "speculators", "-o", tmp_path / "out", "--force").exit_code == 0
    assert not (tmp_path / "out" / "old.txt").exists() and (tmp_path / "out" / "config.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "out"]


def test_converted_drafts_pass_the_config_check(tmp_path):
    assert convert(TINY / "draft", "--to", "speculators", "-o", tmp_path / "s").exit_code == 0
    assert convert(tmp_path / "s", "--to", "zlab", "-o", tmp_path / "z").exit_code == 0
    target = str(TINY / "target")
    res = CliRunner().invoke(cli, [target, "--draft", str(tmp_path / "s"), "--no-deep", "-b", "vllm"])
    assert res.exit_code == 0, res.output  # only vLLM reads the speculators format (DF009 says so for the rest)
    res = CliRunner().invoke(cli, [target, "--draft", str(tmp_path / "z"), "--no-deep"])
    assert res.exit_code == 0, res.output


@pytest.mark.slow
def test_round_tripped_draft_gives_token_identical_smoke_output(tmp_path):
    """The reference runtime runs z-lab drafts only, so the speculators copy is run after converting it
    back: its smoke output must be the original's, token for token and step for step."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    assert convert(TINY / "draft", "--to", "speculators", "-o", tmp_path / "s").exit_code == 0
    assert convert(tmp_path / "s", "--to", "zlab", "-o", tmp_path / "z").exit_code == 0
    runs = []
    for draft in (TINY / "draft", tmp_path / "z"):
        res = CliRunner().invoke(cli, ["smoke", str(TINY / "target"), "--draft", str(draft), "--prompt-ids", "1,2,3",
                                       "--prompt-ids", "5,6", "--max-new-tokens", "16", "-f", "json"])
        assert res.exit_code == 0, res.output
        runs.append([(r["output_tokens"], r["acceptance_lengths"]) for r in json.loads(res.output)["results"]])
    assert runs[0] == runs[1]
    res = CliRunner().invoke(cli, ["smoke", str(TINY / "target"), "--draft", str(tmp_path / "s"), "--prompt-ids", "1"])
    assert res.exit_code == 2 and "convert" in res.output  # the speculators copy is refused with the way out


def test_convert_help_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys; from dflash_compat.cli.app import main; sys.argv=['dflash-check','convert','--help']\n"
            "try: main()\nexcept SystemExit: pass\nassert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_source_files_are_left_as_they_were(tmp_path):
    src = tmp_path / "d"
    shutil.copytree(TINY / "draft", src)
    before = tree_digest(src)
    assert convert(src, "--to", "speculators", "-o", tmp_path / "s").exit_code == 0
    assert tree_digest(src) == before


def test_convert_writes_the_codebooks_bare_as_every_engine_loads_them(tmp_path):
    # vLLM qwen3_dflash2.py:326-331, SGLang srt/models/dflash.py:1166-1171, speculators 0.9.0
    # dflash2/model_definitions.py:261-262 and the dflash MLX loader (model_mlx.py:478-481) load bare names.
    dotted = {(f"{k}.weight" if k.endswith("_codebook") else k): v for k, v in V2_TENSORS.items()}
    books = {"candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook"}
    src = make_draft(tmp_path / "src", V2, dotted)
    assert convert(src, "--to", "speculators", "-o", tmp_path / "spec").exit_code == 0
    spec_cfg = json.loads((tmp_path / "spec" / "config.json").read_text())
    spec_src = make_draft(tmp_path / "spec_src", spec_cfg, dotted)
    assert convert(spec_src, "--to", "zlab", "-o", tmp_path / "zlab").exit_code == 0
    for out, origin in ((tmp_path / "spec", src), (tmp_path / "zlab", spec_src)):
        names = set(tensor_bytes(out))
        assert books <= names and not any(n.endswith("_codebook.weight") for n in names), out
        want = tensor_bytes(origin)["candidate_selector.successor_codebook.weight"]
        assert tensor_bytes(out)["candidate_selector.successor_codebook"] == want
