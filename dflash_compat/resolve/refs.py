"""Resolve TARGET / DRAFT arguments to local files: a folder, or a Hub repo id fetched via huggingface_hub."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from dflash_compat.exceptions import ConfigError, ResolutionError, one_line
from dflash_compat.files.safe_read import MAX_CONFIG_BYTES, decode_float_tags, is_regular_file, load_json_file

__all__ = ["Resolved", "resolve", "check_hub_ref", "local_path", "looks_local", "load_json", "download_weights",
           "SMALL_FILES", "WEIGHT_PATTERNS"]

# The only files the config-level checks fetch: never weights.
SMALL_FILES = ("config.json", "generation_config.json", "tokenizer_config.json")
# What the runtime fetches to run a model: weights (safetensors only, never pickles), configs and
# tokenizer files.
WEIGHT_PATTERNS = ("*.safetensors", "*.json", "*.model", "*.tiktoken", "merges.txt", "vocab.txt")


@dataclass
class Resolved:
    """Where a model's files are. `folder` holds the fetched small files (a local snapshot)."""

    ref: str
    folder: Path
    repo_id: Optional[str] = None
    revision: Optional[str] = None
    files: dict[str, Path] = field(default_factory=dict)
    # A GGUF model (llama.cpp): the local file, or the file name in the Hub repo; None for a checkpoint
    gguf: Optional[str] = None

    @property
    def is_gguf(self) -> bool:
        return self.gguf is not None

    @property
    def is_hub(self) -> bool:
        return self.repo_id is not None

    def json(self, name: str) -> Optional[dict[str, Any]]:
        """A fetched JSON file; config.json as transformers and mlx-lm read it (non-finite floats
        decoded from their {"__float__": ...} tags, safe_read.decode_float_tags)."""
        path = self.files.get(name)
        if path is None:
            return None
        value = load_json(path)
        return decode_float_tags(value) if name == "config.json" else value


def load_json(path: Path) -> Any:
    """Parse a JSON file (a bounded read of a regular file, nesting and integers capped); any problem
    becomes a one-line ConfigError."""
    return load_json_file(path, what=str(path), error=ConfigError, limit=MAX_CONFIG_BYTES)


_REVISION_OPTION = {"target": "--revision", "draft": "--draft-revision"}


def _who(role: str, ref: str) -> str:
    """`target REF` for a message, REF cut to 200 characters (a hostile argument may be 5,000)."""
    return f"{role} {ref if len(ref) <= 200 else ref[:200] + '...'}"


def _split_revision(ref: str) -> tuple[str, Optional[str]]:
    if "@" in ref and not os.path.exists(ref):
        repo, _, rev = ref.rpartition("@")
        if repo and rev:
            return repo, rev
    return ref, None


def local_path(ref: str) -> Optional[Path]:
    """`ref` as an existing path, else None (also for names too long for the file system, an unknown
    `~user`, a NUL byte: they name no folder)."""
    try:
        path = Path(ref).expanduser()
        return path if path.exists() else None
    except (OSError, RuntimeError, ValueError):
        return None


def looks_local(ref: str) -> bool:
    """A name that can only mean a path: it starts with `.`, `/` or `~`, has more than one slash (or a
    Windows separator), or its first segment is an existing folder (`examples/nope`). Never sent to
    the Hub."""
    if ref.startswith((".", "/", "~")) or ref.count("/") > 1 or (os.sep != "/" and os.sep in ref):
        return True
    first = ref.split("/", 1)[0]
    try:
        return "/" in ref and Path(first).is_dir()
    except (OSError, ValueError):
        return False


def _resolve_local(ref: str, path: Path, role: str) -> Resolved:
    who = _who(role, ref)
    if path.name.lower().endswith(".gguf") and not path.is_dir():
        if not is_regular_file(path):
            raise ResolutionError(f"{who}: not a regular file")
        return Resolved(ref=ref, folder=path.parent, gguf=str(path))
    if path.is_file():
        if path.name != "config.json":
            raise ResolutionError(f"{who}: is a file; pass the model's folder (the one holding config.json) or a "
                                  ".gguf file")
        path = path.parent
    if not path.is_dir():
        raise ResolutionError(f"{who}: not a folder; pass the model's folder (the one holding config.json)")
    try:
        os.lstat(path / "config.json")
    except FileNotFoundError:
        ggufs = _local_ggufs(path)
        if len(ggufs) == 1:
            return Resolved(ref=ref, folder=path, gguf=str(path / ggufs[0]))
        if ggufs:
            shown = ", ".join(ggufs[:4]) + (", ..." if len(ggufs) > 4 else "")
            raise ResolutionError(f"{who}: folder has no config.json and {len(ggufs)} GGUF files ({shown}); "
                                  "pass one of them") from None
        raise ResolutionError(f"{who}: folder has no config.json") from None
    except OSError as exc:  # a folder without read/search permission, a name too long
        raise ResolutionError(f"{who}: cannot read the folder ({exc.strerror or exc})") from None
    # config.json as it is (reading it refuses a FIFO, a device or a folder in one line); the optional
    # files only when they are regular files (stat, never open: a FIFO would block the reader).
    files = {name: path / name for name in SMALL_FILES if name == "config.json" or is_regular_file(path / name)}
    return Resolved(ref=ref, folder=path, files=files)


def _local_ggufs(folder: Path) -> list[str]:
    """The regular *.gguf files of a folder (a split model's first shard only), sorted."""
    import re

    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.lower().endswith(".gguf") and is_regular_file(p))
    except OSError:
        return []
    return [n for n in names if not re.search(r"-0*(?:[2-9]|\d{2,})-of-\d+\.gguf$", n.lower())]


def resolve(ref: str, role: str, *, revision: Optional[str] = None, token: Optional[str] = None) -> Resolved:
    """Find `ref` as a local folder, else as a Hub repo id (`org/name[@revision]`). A name that looks
    like a path, or is no repo id, never reaches the Hub; revisions are validated before any request."""
    path = local_path(ref)
    if path is not None:
        return _resolve_local(ref, path, role)
    repo_id, rev = check_hub_ref(ref, role, revision=revision)
    return _resolve_hub(ref, repo_id, revision or rev, role, token)  # a revision may hold slashes (refs/pr/1)


def check_hub_ref(ref: str, role: str, *, revision: Optional[str] = None) -> tuple[str, Optional[str]]:
    """(repo id, the revision after `@`) of a ref that names no existing path, checked without any request:
    ResolutionError in one line for a name that looks like a path or is no repo id, and for a revision
    that is no branch, tag or commit (`../` never reaches the Hub or its cache)."""
    from dflash_compat.resolve.hub import check_revision, is_repo_id

    repo_id, rev = _split_revision(ref)
    if looks_local(repo_id):
        raise ResolutionError(f"{_who(role, ref)}: no such folder")
    if not is_repo_id(repo_id):
        raise ResolutionError(f"{_who(role, ref)}: no such folder, and not a Hub repo id (org/name)")
    if rev is not None:
        check_revision(rev, _who(role, ref))
    if revision is not None:
        check_revision(revision, f"{_who(role, ref)} ({_REVISION_OPTION.get(role, '--revision')})")
    return repo_id, rev


def _resolve_hub(ref: str, repo_id: str, revision: Optional[str], role: str, token: Optional[str]) -> Resolved:
    from dflash_compat.resolve.hub import MissingOnHub, fetch_files, gguf_files

    try:
        files = fetch_files(repo_id, SMALL_FILES, revision=revision, token=token, limit=MAX_CONFIG_BYTES,
                            who=f"{_who(role, ref)}", required="config.json")
    except MissingOnHub:  # a GGUF-only repo (llama.cpp): its header is read remotely, never the file
        found = gguf_files(repo_id, revision=revision, token=token, who=_who(role, ref))
        if not found:
            raise
        if len(found) > 1:
            shown = ", ".join(found[:4]) + (", ..." if len(found) > 4 else "")
            raise ResolutionError(f"{_who(role, ref)}: the Hub repo has no config.json and {len(found)} GGUF files "
                                  f"({shown}); download the one you serve and pass its path") from None
        return Resolved(ref=ref, folder=Path("."), repo_id=repo_id, revision=revision, gguf=found[0])
    folder = files["config.json"].parent
    return Resolved(ref=ref, folder=folder, repo_id=repo_id, revision=revision, files=files)


def download_weights(resolved: Resolved, *, token: Optional[str] = None,
                     patterns: tuple[str, ...] = WEIGHT_PATTERNS, trust_remote_code: bool = False) -> Path:
    """The folder holding the model's weights: the local folder itself (no-op), or a Hub snapshot of
    `patterns` (safetensors, JSON, tokenizer files) fetched via huggingface_hub's cache. With
    `trust_remote_code` the repo's own "*.py" files come too, so its modelling code is there."""
    if not resolved.is_hub:
        return resolved.folder
    if trust_remote_code and "*.py" not in patterns:
        patterns = (*patterns, "*.py")
    try:
        from huggingface_hub import errors as hf_errors
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - a core dependency
        raise ResolutionError(
            f"{resolved.ref}: huggingface_hub is not installed; pip install huggingface_hub") from None
    from dflash_compat.resolve.hub import quiet

    try:
        with quiet():
            folder = snapshot_download(
                resolved.repo_id, revision=resolved.revision, token=token, allow_patterns=list(patterns)
            )
    except (hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled):
        raise ResolutionError(
            f"{resolved.ref}: weights are not in the local Hugging Face cache and the Hub cannot be reached"
        ) from None
    except hf_errors.HfHubHTTPError as exc:
        raise ResolutionError(f"{resolved.ref}: weight download failed ({one_line(exc)})") from None
    except OSError as exc:
        raise ResolutionError(f"{resolved.ref}: weight download failed ({exc})") from None
    return Path(folder)
