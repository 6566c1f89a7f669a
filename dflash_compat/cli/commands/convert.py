"""`dflash-check convert`: rewrite a DFlash draft checkpoint between the z-lab and speculators formats."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import click

from dflash_compat.exceptions import ConfigError, DFlashCompatError, InputError
from dflash_compat.files.weightfiles import INDEX_FILE

__all__ = ["convert_cmd", "convert_checkpoint", "Converted"]

# Files next to the weights that the engines read in both formats (vLLM: qwen3_dflash.py:894-931). Copied
# as bytes; never unpickled here.
COMPANION_FILES = ("mask_embedding.pt",)
MAX_COMPANION_BYTES = 256 * 1024 * 1024  # one embedding row: a few KB to a few MB


@dataclass
class Converted:
    """What convert wrote."""

    source_format: str
    target_format: str
    files: list[str]
    tensors: int
    data_bytes: int
    ids: tuple[str, list[Any], str, list[Any]]  # (key, ids) before and after
    notes: list[str] = field(default_factory=list)


def _paths(src: Path, out: Path, force: bool, verifier: Optional[str]) -> tuple[Path, Path]:
    """The input folder (resolved) and the output path (absolute, not resolved: a symlink named as OUT is
    replaced itself with --force, never the folder it points to), checked before anything is read."""
    from dflash_compat.files.safe_read import is_regular_file
    from dflash_compat.files.safe_write import check_output_folder, model_folders

    if not is_regular_file(src / "config.json"):  # never raises (a name too long, a NUL: not a folder)
        raise InputError(f"{src}: not a local draft folder with a config.json (convert reads local folders; "
                         "download a Hub draft first, e.g. `hf download REPO --local-dir DIR`)")
    s = src.resolve()
    absolute = Path(os.path.abspath(out.expanduser()))
    if os.path.isdir(absolute.parent):  # False, never OSError, for a name too long
        o = absolute.parent.resolve() / absolute.name  # where OUT really is, the last name not followed
        if o == s or s in o.parents:
            raise InputError(f"output {out} is inside the input folder {src}; write it somewhere else")
        if o in s.parents:
            raise InputError(f"output {out} contains the input folder {src}; write it somewhere else")
    # the rules every output follows (safe_write): no symlink or existing folder without --force, never a
    # file, never in, at or around a model folder (the draft, a local --verifier, the Hugging Face cache)
    return s, check_output_folder(out, force=force, option="-o", protected=model_folders(str(src), verifier))


def _read_source(src: Path):
    from dflash_compat.files.safetensors_header import read_local_headers
    from dflash_compat.files.safetensors_stream import read_tensors
    from dflash_compat.files.weightfiles import weight_paths

    # the one checked lookup (the runtimes' too): index names inside the folder, safetensors only,
    # regular files, no symlink out of the folder, no FIFO or device among its files
    files = [p.name for p in weight_paths(src, f"draft {src}")]
    if not files:
        pickles = sorted(p.name for p in src.glob("*.bin"))
        why = f" ({pickles[0]} is pickled, which convert never opens)" if pickles else ""
        raise InputError(f"{src}: no .safetensors weights to convert{why}")
    read_local_headers(src)  # validates every header and the index before anything is written
    return files, (src / INDEX_FILE).is_file(), {f: read_tensors(src / f) for f in files}


def _write(tmp: Path, plan, files: list[str], indexed: bool, per_file: dict) -> tuple[int, int]:
    from dflash_compat.files.safetensors_stream import write_tensors

    weight_map: dict[str, str] = {}
    total = count = 0
    for fname in files:
        metadata, tensors = per_file[fname]
        items = [(plan.renames[t.name], t) for t in tensors if t.name not in plan.drop]
        total += write_tensors(tmp / fname, items, metadata)
        count += len(items)
        weight_map.update({name: fname for name, _ in items})
    if indexed:
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        (tmp / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    (tmp / "config.json").write_text(json.dumps(plan.config, indent=2) + "\n", encoding="utf-8")
    return count, total


def _verify(tmp: Path, expect_formats: tuple[str, ...]) -> None:
    """The output must read back: its config as the intended format, every header complete."""
    from dflash_compat.files.safetensors_header import read_local_headers
    from dflash_compat.resolve.refs import load_json
    from dflash_compat.specs import parse_draft_config

    spec = parse_draft_config(load_json(tmp / "config.json"), str(tmp))
    if spec.format not in expect_formats:  # pragma: no cover - a bug in the conversion table
        raise DFlashCompatError(f"internal error: the converted config reads as {spec.format}")
    for h in read_local_headers(tmp):
        if h.data_bytes_present != h.data_bytes_declared:  # pragma: no cover - write_tensors writes exactly
            raise DFlashCompatError(f"internal error: {h.name} was written incompletely")


def _copy_companion(src: Path, dst: Path) -> None:
    """Copy a small file beside the weights as bytes (a bounded read of a regular file: a FIFO or a device
    in its place is refused, never waited on)."""
    from dflash_compat.files.safe_read import read_bytes
    from dflash_compat.files.weightfiles import refuse_link_out

    refuse_link_out(src, src.parent)  # never copy a file from outside the draft folder into the output
    dst.write_bytes(read_bytes(src, MAX_COMPANION_BYTES, what=f"{src.parent.name}/{src.name}"))


def _swap_in(tmp: Path, out: Path) -> None:
    """Replace `out` by `tmp` with renames only: a failure leaves the old output (or none) in place."""
    if os.path.lexists(out):  # an existing folder, or (with --force) a symlink: the link is moved, not its target
        backup = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        backup.rmdir()
        out.rename(backup)
        try:
            tmp.rename(out)
        except OSError:
            backup.rename(out)
            raise
        if backup.is_symlink():
            backup.unlink()
        else:
            shutil.rmtree(backup, ignore_errors=True)
    else:
        tmp.rename(out)


def _verifier(name: Optional[str]) -> dict[str, Any]:
    """speculators' verifier record: a local folder's config gives the architectures; a repo id is kept as is."""
    from dflash_compat.inputs import check_name

    if name is None:
        return {"name_or_path": None, "architectures": []}
    check_name(name, "--verifier")  # written into the converted config and printed
    from dflash_compat.files.safe_read import is_regular_file

    cfg = Path(name) / "config.json"
    archs: list[str] = []
    if is_regular_file(cfg):
        from dflash_compat.resolve.refs import load_json

        raw = load_json(cfg)
        if not isinstance(raw, dict):
            raise ConfigError(f"--verifier {name}: {cfg.name} is not a JSON object (got {type(raw).__name__})")
        listed = raw.get("architectures")
        if listed is not None and not (isinstance(listed, list) and all(isinstance(a, str) for a in listed)):
            raise ConfigError(f"--verifier {name}: `architectures` in {cfg.name} should be a list of class names")
        archs = [check_name(a, f"--verifier {name}: architectures") for a in listed or []]
    return {"name_or_path": name, "architectures": archs}


def convert_checkpoint(src: Path, out: Path, to: str, force: bool = False, verifier: Optional[str] = None) -> Converted:
    """Convert the draft in folder `src` to format `to` ("zlab" / "speculators") in a new folder `out`."""
    from dflash_compat.convert.plan import plan_conversion
    from dflash_compat.resolve.refs import load_json
    from dflash_compat.specs import parse_draft_config

    s, o = _paths(src, out, force, verifier)
    spec = parse_draft_config(load_json(s / "config.json"), str(src))
    files, indexed, per_file = _read_source(s)
    names = [t.name for f in files for t in per_file[f][1]]
    plan = plan_conversion(spec, names, to, _verifier(verifier) if to == "speculators" else None)
    tmp = Path(tempfile.mkdtemp(prefix=f".{o.name}.tmp-", dir=o.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the output is an ordinary folder
    try:
        count, total = _write(tmp, plan, files, indexed, per_file)
        for extra in COMPANION_FILES:
            if os.path.lexists(s / extra):
                _copy_companion(s / extra, tmp / extra)
                plan.notes.append(f"{extra} copied unchanged (vLLM and SGLang read it in both formats)")
        _verify(tmp, ("speculators", "speculators-dflash2") if to == "speculators" else ("zlab-v1", "zlab-v2"))
        _swap_in(tmp, o)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    new = parse_draft_config(plan.config, str(out))
    ids = (spec.key("target_layer_ids"), spec.raw.get("aux_hidden_state_layer_ids", spec.target_layer_ids),
           new.key("target_layer_ids"), new.raw.get("aux_hidden_state_layer_ids", new.target_layer_ids))
    return Converted(spec.format, new.format, files + ([INDEX_FILE] if indexed else []), count, total, ids,
                     plan.notes)


@click.command("convert")
@click.argument("draft", metavar="DRAFT")
@click.option("--to", "to", type=click.Choice(("zlab", "speculators")), required=True,
              help="The format to write: zlab (config.json with dflash_config) or speculators "
              "(vllm-project/speculators, aux ids = z-lab ids + 1).")
@click.option("--output", "-o", required=True, metavar="OUT",
              help="The folder to create; it must not exist (see --force) and must lie outside DRAFT.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists (the old folder is removed only once the "
              "new one is complete).")
@click.option("--verifier", metavar="REPO_OR_FOLDER",
              help="With --to speculators: the target model to record as speculators_config.verifier (a Hub repo "
              "id, or a local folder whose config.json gives the architectures).")
def convert_cmd(draft: str, to: str, output: str, force: bool, verifier: Optional[str]) -> None:
    """Convert the DFlash draft in folder DRAFT between the z-lab and speculators formats.

    The config is rewritten (layer ids shifted by one, keys moved) and the safetensors are copied
    tensor by tensor, byte for byte, without loading the model. A draft that the other format cannot
    describe exactly is refused with the reason (exit 2). The output is written to a temporary folder
    next to OUT and renamed into place when complete.
    """
    # a DFlashCompatError is rendered by the CLI group (dflash_compat/cli/errors.py): one escaped line, exit 2
    done = convert_checkpoint(Path(draft), Path(output), to, force=force, verifier=verifier)
    from dflash_compat.emitters._safe import printable
    from dflash_compat.quoting import quote, quote_items

    # the output policy of every command: what came from the draft is quoted short and escaped
    lines = [f"converted {draft} ({done.source_format}) -> {output} ({done.target_format})",
             f"  {done.tensors} tensors, {done.data_bytes} bytes in {quote_items(done.files, raw=True)}",
             f"  {done.ids[0]} {quote(done.ids[1])} -> {done.ids[2]} {quote(done.ids[3])}",
             *(f"  note: {note}" for note in done.notes)]
    click.echo("\n".join(printable(line) for line in lines))
