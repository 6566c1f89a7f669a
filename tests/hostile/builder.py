"""Hostile model folders, built in a temporary folder: each case is a target/draft pair (or a Hub id)
with one hostile thing in it, and the options that point a command at it.

A case is a function `(root, hub) -> Case`; CASES lists them all. `root` is the case's own folder
(the commands run there), `hub` the fake Hub (tests/hostile/fake_hub.py) that Hub cases register
repos with. Tags say which commands a case applies to (tests/hostile/test_hostile.py: COMMANDS).
Nothing here imports torch: building every case takes well under a second.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from tests.configs import QWEN3_8B, QWEN3_8B_DRAFT, merge
from tests.hostile.fake_hub import FakeHub

__all__ = ["Case", "CASES", "safetensors_bytes"]

# Tags: "pair" runs `check` (config-only); "prebuild": the deep check takes another path than the
# config check here and must still end before building any model (it runs too, as fast); "target":
# the hostility is in the target (`adapt` runs too); "output": where an output goes (`check -o`);
# "adapt-only": an `adapt` input (its -o, its --map-file); "smoke": a tiny pair both runtimes load, with one
# hostile thing (smoke on torch runs it; "smoke-both": on MLX too, where the runtimes read files differently);
# "convert": the hostility is in the draft or in convert's
# -o (`convert` runs it, writing outside the case folder unless the case says otherwise); "init-draft": an
# init-draft input or its -o (every "target" case runs it too); "train": a train input that must be refused
# before torch is imported (its --data, its -o).
Builder = Callable[[Path, FakeHub], "Case"]
VLM = Path(__file__).resolve().parent.parent / "fixtures" / "pairs" / "qwen3-vl-8b"
TINY = Path(__file__).resolve().parent.parent.parent / "examples" / "tiny-qwen3"  # torch and MLX load it


@dataclass(frozen=True)
class Case:
    target: str
    draft: str
    check_args: tuple[str, ...] = ()
    adapt_args: tuple[str, ...] = ()
    smoke_args: tuple[str, ...] = ()
    convert_args: tuple[str, ...] = ()
    init_args: tuple[str, ...] = ()  # replaces init-draft's default -o and --mask-token-id
    train_args: tuple[str, ...] = ()  # replaces train's default --data and -o
    env: dict[str, str] = field(default_factory=dict)
    expect_exit: Optional[int] = None  # stricter than the contract (0/1 with a report, or 2 in one line)
    expect_text: Optional[str] = None  # in stderr when the exit is 2, else in stdout
    after: Optional[Callable[[FakeHub], None]] = None  # more checks once the command ran


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A valid safetensors file of zero-filled F32/BF16 tensors, written by hand (no torch)."""
    header: dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = 1
        for s in shape:
            n *= s
        size = n * {"F32": 4, "BF16": 2}[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset


def _write(folder: Path, config: Any = None, raw: Optional[str] = None, **files: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        (folder / "config.json").write_text(raw)
    elif config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    for name, content in files.items():
        path = folder / name.replace("__", ".")
        path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return folder


def _pair(root: Path, target: Any = None, draft: Any = None) -> tuple[str, str]:
    _write(root / "t", QWEN3_8B if target is None else target)
    _write(root / "d", QWEN3_8B_DRAFT if draft is None else draft)
    return "t", "d"


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _draft_index(root: Path, weight_map: dict[str, Any]) -> Case:
    t, d = _pair(root)
    _write(root / "outside", **{"x__safetensors": safetensors_bytes({"fc.weight": ("F32", [2, 2])})})
    (root / "d" / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return Case(t, d)


def tagged(*tags: str) -> Callable[[Builder], Builder]:
    """Which commands a case applies to (see the tags above), read without building it."""

    def mark(fn: Builder) -> Builder:
        fn.tags = frozenset(tags)  # type: ignore[attr-defined]
        return fn

    return mark


# ---- the cases --------------------------------------------------------------------------------

@tagged("pair", "prebuild")
def draft_index_traversal(root: Path, hub: FakeHub) -> Case:
    return _draft_index(root, {"fc.weight": "../outside/x.safetensors"})


@tagged("pair", "prebuild")
def draft_index_absolute(root: Path, hub: FakeHub) -> Case:
    return _draft_index(root, {"fc.weight": "/etc/passwd"})


@tagged("pair", "prebuild")
def draft_index_not_a_string(root: Path, hub: FakeHub) -> Case:
    return _draft_index(root, {"fc.weight": 5})


@tagged("pair")
def draft_index_bin_shard(root: Path, hub: FakeHub) -> Case:
    case = _draft_index(root, {"fc.weight": "pytorch_model.bin"})
    (root / "d" / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not a real pickle")
    return case


@tagged("pair")
def draft_fifo_weights(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / "d" / "model.safetensors").write_bytes(safetensors_bytes({"fc.weight": ("F32", [2, 2])}))
    os.mkfifo(root / "d" / "extra.safetensors")
    return Case(t, d)


@tagged("pair", "target")
def target_fifo_config(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / t / "config.json").unlink()
    os.mkfifo(root / t / "config.json")
    return Case(t, d, expect_exit=2, expect_text="FIFO")


@tagged("pair")
def draft_fifo_config(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / d / "config.json").unlink()
    os.mkfifo(root / d / "config.json")
    return Case(t, d, expect_exit=2, expect_text="FIFO")


@tagged("pair")
def target_fifo_generation_config(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    os.mkfifo(root / t / "generation_config.json")
    return Case(t, d)


@tagged("pair", "target")
def target_config_is_dev_zero(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / t / "config.json").unlink()
    (root / t / "config.json").symlink_to("/dev/zero")
    return Case(t, d, expect_exit=2, expect_text="device")


@tagged("pair", "target")
def target_config_is_a_folder(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / t / "config.json").unlink()
    (root / t / "config.json").mkdir()
    return Case(t, d, expect_exit=2)


@tagged("pair", "target")
def target_config_too_large(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    with open(root / t / "config.json", "r+b") as fh:  # sparse: 65 MiB on paper, nothing on disk
        fh.truncate(65 * 1024 * 1024)
    return Case(t, d, expect_exit=2, expect_text="bytes")


@tagged("pair", "target")
def target_nested_100k(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    _write(root / t, raw='{"model_type": "qwen3", "x": ' + _nested(100_000) + "}")
    return Case(t, d, expect_exit=2, expect_text="nested")


@tagged("pair")
def draft_nested_100k(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    _write(root / d, raw='{"block_size": 16, "x": ' + _nested(100_000) + "}")
    return Case(t, d, expect_exit=2, expect_text="nested")


@tagged("pair", "prebuild", "target")
def target_nested_300(root: Path, hub: FakeHub) -> Case:
    """Deep enough for pydantic's serializer and transformers' deepcopy, shallow enough for json."""
    t, d = _pair(root)
    cfg = json.dumps(merge(QWEN3_8B, rope_scaling={"rope_type": "default"}))
    _write(root / t, raw=cfg[:-1] + ', "extra": ' + _nested(300) + "}")
    return Case(t, d, expect_exit=2, expect_text="nested")


@tagged("pair", "prebuild", "target")
def target_huge_integer(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    _write(root / t, raw=json.dumps(QWEN3_8B)[:-1] + ', "rope_theta": 1' + "0" * 300 + "}")
    return Case(t, d, expect_exit=2, expect_text="digits")


@tagged("pair", "prebuild", "target")
def target_huge_layer_count(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root, target=merge(QWEN3_8B, num_hidden_layers=10**7))
    return Case(t, d)


@tagged("pair", "prebuild", "target")
def target_huge_sizes(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root, target=merge(QWEN3_8B, hidden_size=10**9, intermediate_size=10**12, vocab_size=10**11,
                                    num_attention_heads=10**6))
    return Case(t, d)


@tagged("pair", "prebuild", "target")
def target_vlm_vision_depth(root: Path, hub: FakeHub) -> Case:
    cfg = json.loads((VLM / "target" / "config.json").read_text())
    cfg["vision_config"]["depth"] = 10**6
    t, d = _pair(root, target=cfg, draft=json.loads((VLM / "draft" / "config.json").read_text()))
    return Case(t, d)


@tagged("pair")  # adapt never reads EOS ids; it would only build the 8B tree (a framework import)
def target_eos_list_120k(root: Path, hub: FakeHub) -> Case:
    """A 689 KB-class generation config: 120,000 EOS ids (half repeated)."""
    t, d = _pair(root)
    ids = list(range(60_000)) * 2
    _write(root / t, **{"generation_config__json": {"eos_token_id": ids}})
    return Case(t, d)


@tagged("pair")
def draft_layer_ids_50k(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root, draft=merge(QWEN3_8B_DRAFT, **{"dflash_config.target_layer_ids": list(range(50_000))}))
    return Case(t, d)


@tagged("pair")
def revision_traversal_suffix(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    return Case("org/model@../../../escape", "d", expect_exit=2,
                expect_text="revision")


@tagged("pair")
def revision_traversal_option(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    return Case("t", "org/draft",
                check_args=("--draft-revision", "refs/../../x"), expect_exit=2, expect_text="revision")


@tagged("pair", "target")
def path_too_long(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    return Case("t/" + "x" * 300, "d", expect_exit=2,
                expect_text="no such folder")


@tagged("pair", "target")
def hub_id_too_long(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    return Case("org/" + "m" * 300, "d", expect_exit=2)


@tagged("pair", "target")
def mistyped_local_path(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    return Case("t/nope", "d", env={"HF_ENDPOINT": hub.url},
                expect_exit=2, expect_text="no such folder",
                after=lambda h: _assert_no_request(h, "t/nope"))


@tagged("pair", "target")
def hub_answers_500(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    hub.add("org/err500", {"config.json": QWEN3_8B}, behaviour="error500")
    return Case("org/err500", "d", env={"HF_ENDPOINT": hub.url},
                expect_exit=2, expect_text="could not be reached")


@tagged("pair")
def hub_hangs(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    hub.add("org/hang", {"config.json": QWEN3_8B}, behaviour="hang")
    return Case("t", "org/hang",
                env={"HF_ENDPOINT": hub.url, "DFLASH_CHECK_HUB_TIMEOUT": "2"},
                expect_exit=2, expect_text="could not be reached")


@tagged("pair", "target")
def hub_oversized_config(root: Path, hub: FakeHub) -> Case:
    _pair(root)
    hub.add("org/huge", {"config.json": QWEN3_8B}, declared_sizes={"config.json": 300 * 1024 * 1024})
    return Case("org/huge", "d", env={"HF_ENDPOINT": hub.url},
                expect_exit=2, expect_text="bytes",
                after=lambda h: _assert_no_request(h, "/org/huge/resolve/"))


@tagged("output")
def output_symlink_to_config(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / "out").mkdir()
    (root / "out" / "report.json").symlink_to(root / t / "config.json")
    return Case(t, d, check_args=("-o", "out/report.json"), expect_exit=2,
                expect_text="symlink")


@tagged("output")
def output_inside_target(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    return Case(t, d, check_args=("-o", f"{t}/config.json"), expect_exit=2,
                expect_text="model folder")


@tagged("output")
def output_foreign_file(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / "out").mkdir()
    (root / "out" / "notes.txt").write_text("my notes\n")
    return Case(t, d, check_args=("-o", "out/notes.txt"), expect_exit=2,
                expect_text="--force")


@tagged("output")
def output_fifo(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / "out").mkdir()
    os.mkfifo(root / "out" / "report.txt")
    return Case(t, d, check_args=("-o", "out/report.txt", "--force"), expect_exit=2,
                expect_text="FIFO")


@tagged("adapt-only")
def adapt_output_symlink(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / "out").mkdir()
    (root / "out" / "adapter.py").symlink_to(root / t / "config.json")
    return Case(t, d, adapt_args=("--map", "embed=a", "--map", "layers=b", "-o",
                                                                   "out/adapter.py"), expect_exit=2,
                expect_text="symlink")


@tagged("adapt-only")
def adapt_map_file_dev_zero(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / "map.json").symlink_to("/dev/zero")
    return Case(t, d, adapt_args=("--map-file", "map.json"), expect_exit=2,
                expect_text="device")


@tagged("adapt-only")
def adapt_map_file_fifo(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    os.mkfifo(root / "map.toml")
    return Case(t, d, adapt_args=("--map-file", "map.toml"), expect_exit=2,
                expect_text="FIFO")


def _tiny(root: Path) -> tuple[str, str]:
    """The bundled tiny pair (a few hundred KB), copied: every runtime loads it in a second."""
    shutil.copytree(TINY / "target", root / "t")
    shutil.copytree(TINY / "draft", root / "d")
    return "t", "d"


def _tiny_draft_index(root: Path, weight_map: dict[str, Any]) -> Case:
    t, d = _tiny(root)
    (root / "outside").mkdir()
    (root / d / "model.safetensors").rename(root / "outside" / "x.safetensors")  # valid weights, out of the folder
    (root / d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return Case(t, d, expect_exit=2)


@tagged("smoke-both", "convert")
def tiny_draft_index_traversal(root: Path, hub: FakeHub) -> Case:
    case = _tiny_draft_index(root, {"fc.weight": "../outside/x.safetensors"})
    return replace(case, expect_text="not a file name")


@tagged("smoke", "convert")
def tiny_draft_index_absolute(root: Path, hub: FakeHub) -> Case:
    return replace(_tiny_draft_index(root, {"fc.weight": "/etc/passwd"}), expect_text="not a file name")


@tagged("smoke-both", "convert")
def tiny_draft_index_bin_shard(root: Path, hub: FakeHub) -> Case:
    case = _tiny_draft_index(root, {"fc.weight": "pytorch_model.bin"})
    (root / "d" / "pytorch_model.bin").write_bytes(b"\x80\x04 not a real pickle")
    return replace(case, expect_text="pickled weights are never opened")


@tagged("smoke-both", "convert")
def tiny_draft_fifo_weights(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    os.mkfifo(root / d / "extra.safetensors")
    return Case(t, d, expect_exit=2, expect_text="FIFO")


@tagged("smoke-both")
def tiny_target_fifo_weights(root: Path, hub: FakeHub) -> Case:
    """mlx-lm opens every model*.safetensors it finds; transformers opens files by name."""
    t, d = _tiny(root)
    os.mkfifo(root / t / "model-00002.safetensors")
    return Case(t, d, expect_exit=2, expect_text="FIFO")


@tagged("smoke", "convert")
def tiny_draft_nested_config(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    _write(root / d, raw='{"block_size": 4, "x": ' + _nested(100_000) + "}")
    return Case(t, d, expect_exit=2, expect_text="nested")


@tagged("smoke", "convert")
def tiny_draft_layer_ids_50k(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    cfg = json.loads((root / d / "config.json").read_text())
    cfg["dflash_config"]["target_layer_ids"] = list(range(50_000))
    _write(root / d, cfg)
    return Case(t, d)


@tagged("smoke")
def smoke_prompts_dev_zero(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    (root / "prompts.txt").symlink_to("/dev/zero")
    return Case(t, d, smoke_args=("--prompts-file", "prompts.txt"), expect_exit=2, expect_text="device")


@tagged("smoke")
def smoke_prompts_fifo(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    os.mkfifo(root / "prompts.txt")
    return Case(t, d, smoke_args=("--prompts-file", "prompts.txt"), expect_exit=2, expect_text="FIFO")


@tagged("smoke")
def smoke_profile_out_symlink(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    (root / "profile.json").symlink_to(root / t / "config.json")
    return Case(t, d, smoke_args=("--profile-out", "profile.json"), expect_exit=2, expect_text="symlink")


@tagged("smoke")
def smoke_profile_out_inside_draft(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    return Case(t, d, smoke_args=("--profile-out", f"{d}/profile.json", "--force"), expect_exit=2,
                expect_text="model folder")


@tagged("smoke")
def smoke_revision_traversal(root: Path, hub: FakeHub) -> Case:
    _, d = _tiny(root)
    return Case("org/model@../../../escape", d, expect_exit=2, expect_text="revision")


@tagged("convert")
def convert_output_symlink(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    (root / "out").symlink_to(root / t)
    return Case(t, d, convert_args=("-o", "out"), expect_exit=2, expect_text="symlink")


@tagged("convert")
def convert_output_inside_draft(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    return Case(t, d, convert_args=("-o", f"{d}/converted", "--force"), expect_exit=2, expect_text="inside")


@tagged("convert")
def convert_output_over_a_folder(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    return Case(t, d, convert_args=("-o", t), expect_exit=2, expect_text="--force")


@tagged("convert")
def convert_companion_fifo(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    os.mkfifo(root / d / "mask_embedding.pt")
    return Case(t, d, expect_exit=2, expect_text="FIFO")


@tagged("convert")
def convert_companion_link_out(root: Path, hub: FakeHub) -> Case:
    t, d = _tiny(root)
    (root / "secret.txt").write_text("not for the output folder")
    (root / d / "mask_embedding.pt").symlink_to(root / "secret.txt")
    return Case(t, d, expect_exit=2, expect_text="outside the model folder")


@tagged("init-draft")
def init_draft_output_symlink(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    (root / "out").symlink_to(root / t)
    return Case(t, d, init_args=("-o", "out", "--mask-token-id", "151669"), expect_exit=2, expect_text="symlink")


@tagged("init-draft")
def init_draft_output_inside_target(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    return Case(t, d, init_args=("-o", f"{t}/draft", "--force"), expect_exit=2, expect_text="model folder")


@tagged("init-draft")
def init_draft_output_around_target(root: Path, hub: FakeHub) -> Case:
    t, d = _pair(root)
    return Case(t, d, init_args=("-o", ".", "--force"), expect_exit=2,
                expect_text="contains the model folder")


def _train_case(root: Path, *args: str, **expect: Any) -> Case:
    t, d = _pair(root)
    (root / "data.txt").write_text("some training text\n")
    return Case(t, d, train_args=args, **expect)


@tagged("train")
def train_data_fifo(root: Path, hub: FakeHub) -> Case:
    case = _train_case(root, "--data", "corpus.txt", "-o", "../trained", expect_exit=2, expect_text="FIFO")
    os.mkfifo(root / "corpus.txt")
    return case


@tagged("train")
def train_data_dev_zero(root: Path, hub: FakeHub) -> Case:
    case = _train_case(root, "--data", "corpus.txt", "-o", "../trained", expect_exit=2, expect_text="device")
    (root / "corpus.txt").symlink_to("/dev/zero")
    return case


@tagged("train")
def train_data_jsonl_nested(root: Path, hub: FakeHub) -> Case:
    case = _train_case(root, "--data", "corpus.jsonl", "-o", "../trained", expect_exit=2, expect_text="nested")
    (root / "corpus.jsonl").write_text('{"text": "a"}\n{"text": ' + _nested(100_000) + "}\n")
    return case


@tagged("train")
def train_output_symlink(root: Path, hub: FakeHub) -> Case:
    case = _train_case(root, "--data", "data.txt", "-o", "out", expect_exit=2, expect_text="symlink")
    (root / "out").symlink_to(root / case.target)
    return case


@tagged("train")
def train_output_is_the_draft(root: Path, hub: FakeHub) -> Case:
    return _train_case(root, "--data", "data.txt", "-o", "d", "--force", expect_exit=2, expect_text="model folder")


def _assert_no_request(hub: FakeHub, needle: str) -> None:
    assert not [r for r in hub.requests if needle in r[1]], hub.requests


CASES: list[Builder] = [
    draft_index_traversal, draft_index_absolute, draft_index_not_a_string, draft_index_bin_shard,
    draft_fifo_weights, target_fifo_config, draft_fifo_config, target_fifo_generation_config,
    target_config_is_dev_zero, target_config_is_a_folder, target_config_too_large,
    target_nested_100k, draft_nested_100k, target_nested_300, target_huge_integer,
    target_huge_layer_count, target_huge_sizes, target_vlm_vision_depth,
    target_eos_list_120k, draft_layer_ids_50k,
    revision_traversal_suffix, revision_traversal_option, path_too_long, hub_id_too_long, mistyped_local_path,
    hub_answers_500, hub_hangs, hub_oversized_config,
    output_symlink_to_config, output_inside_target, output_foreign_file, output_fifo,
    adapt_output_symlink, adapt_map_file_dev_zero, adapt_map_file_fifo,
    tiny_draft_index_traversal, tiny_draft_index_absolute, tiny_draft_index_bin_shard, tiny_draft_fifo_weights,
    tiny_target_fifo_weights, tiny_draft_nested_config, tiny_draft_layer_ids_50k,
    smoke_prompts_dev_zero, smoke_prompts_fifo, smoke_profile_out_symlink, smoke_profile_out_inside_draft,
    smoke_revision_traversal,
    convert_output_symlink, convert_output_inside_draft, convert_output_over_a_folder, convert_companion_fifo,
    convert_companion_link_out,
    init_draft_output_symlink, init_draft_output_inside_target, init_draft_output_around_target,
    train_data_fifo, train_data_dev_zero, train_data_jsonl_nested, train_output_symlink, train_output_is_the_draft,
]
