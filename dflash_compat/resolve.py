"""Resolve TARGET / DRAFT arguments to local files: a folder, or a Hub repo id fetched via huggingface_hub."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .exceptions import ConfigError, ResolutionError, first_line

__all__ = ["Resolved", "resolve", "load_json", "download_weights", "SMALL_FILES", "WEIGHT_PATTERNS"]

# The only files the config-level checks fetch: never weights.
SMALL_FILES = ("config.json", "generation_config.json", "tokenizer_config.json")
# What the runtime fetches to run a model: weights (safetensors only, never pickles), configs and
# tokenizer files.
WEIGHT_PATTERNS = ("*.safetensors", "*.json", "*.model", "*.tiktoken", "merges.txt", "vocab.txt")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_MAX_JSON_BYTES = 64 * 1024 * 1024


@dataclass
class Resolved:
    """Where a model's files are. `folder` holds the fetched small files (a local snapshot)."""

    ref: str
    folder: Path
    repo_id: Optional[str] = None
    revision: Optional[str] = None
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def is_hub(self) -> bool:
        return self.repo_id is not None

    def json(self, name: str) -> Optional[dict[str, Any]]:
        path = self.files.get(name)
        return load_json(path) if path is not None else None


def load_json(path: Path) -> Any:
    """Parse a JSON file; any problem becomes a one-line ConfigError."""
    try:
        size = path.stat().st_size
        if size > _MAX_JSON_BYTES:
            raise ConfigError(f"{path}: {size} bytes is too large for a config file")
        text = path.read_text(encoding="utf-8")
    except ConfigError:
        raise
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def _split_revision(ref: str) -> tuple[str, Optional[str]]:
    if "@" in ref and not os.path.exists(ref):
        repo, _, rev = ref.rpartition("@")
        if repo and rev:
            return repo, rev
    return ref, None


def resolve(ref: str, role: str, *, revision: Optional[str] = None, token: Optional[str] = None) -> Resolved:
    """Find `ref` as a local folder, else as a Hub repo id (`org/name[@revision]`)."""
    path = Path(ref).expanduser()
    if path.exists():
        if path.is_file():
            if path.name != "config.json":
                raise ResolutionError(f"{role} {ref}: is a file; pass the model's folder (the one holding config.json)")
            path = path.parent
        if not (path / "config.json").is_file():
            raise ResolutionError(f"{role} {ref}: folder has no config.json")
        files = {name: path / name for name in SMALL_FILES if (path / name).is_file()}
        return Resolved(ref=ref, folder=path, files=files)

    repo_id, rev = _split_revision(ref)
    rev = revision or rev  # a revision may hold slashes itself (refs/pr/1)
    looks_local = repo_id.startswith((".", "/", "~")) or repo_id.count("/") > 1 or (os.sep != "/" and os.sep in repo_id)
    if looks_local or not _REPO_ID.match(repo_id):
        raise ResolutionError(f"{role} {ref}: no such folder, and not a Hub repo id (org/name)")
    return _resolve_hub(ref, repo_id, rev, role, token)


def _resolve_hub(ref: str, repo_id: str, revision: Optional[str], role: str, token: Optional[str]) -> Resolved:
    try:
        from huggingface_hub import errors as hf_errors
        from huggingface_hub import hf_hub_download
    except ImportError:  # pragma: no cover - a core dependency
        raise ResolutionError(f"{role} {ref}: huggingface_hub is not installed; pip install huggingface_hub") from None

    files: dict[str, Path] = {}
    for name in SMALL_FILES:
        try:
            local = hf_hub_download(repo_id, name, revision=revision, token=token)
        except hf_errors.GatedRepoError:
            raise ResolutionError(
                f"{role} {ref}: gated repo; accept its terms on the Hub and log in (hf auth login or HF_TOKEN)"
            ) from None
        except hf_errors.RepositoryNotFoundError:
            raise ResolutionError(
                f"{role} {ref}: repository not found on the Hub (or private: log in or set HF_TOKEN)"
            ) from None
        except hf_errors.RevisionNotFoundError:
            raise ResolutionError(f"{role} {ref}: revision {revision!r} not found") from None
        except (hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled):
            if name == "config.json":
                raise ResolutionError(
                    f"{role} {ref}: not in the local Hugging Face cache and the Hub cannot be reached "
                    "(offline: HF_HUB_OFFLINE is set or there is no network); download it first or pass a folder"
                ) from None
            continue
        except hf_errors.EntryNotFoundError:
            if name == "config.json":
                raise ResolutionError(f"{role} {ref}: the repo has no config.json") from None
            continue
        except hf_errors.HFValidationError:
            raise ResolutionError(f"{role} {ref}: not a valid Hub repo id") from None
        except hf_errors.HfHubHTTPError as exc:
            raise ResolutionError(f"{role} {ref}: Hub request failed ({first_line(exc)})") from None
        except (OSError, ValueError) as exc:
            if name == "config.json":
                raise ResolutionError(f"{role} {ref}: cannot fetch config.json ({exc})") from None
            continue
        files[name] = Path(local)
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
    try:
        folder = snapshot_download(
            resolved.repo_id, revision=resolved.revision, token=token, allow_patterns=list(patterns)
        )
    except (hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled):
        raise ResolutionError(
            f"{resolved.ref}: weights are not in the local Hugging Face cache and the Hub cannot be reached"
        ) from None
    except hf_errors.HfHubHTTPError as exc:
        raise ResolutionError(f"{resolved.ref}: weight download failed ({first_line(exc)})") from None
    except OSError as exc:
        raise ResolutionError(f"{resolved.ref}: weight download failed ({exc})") from None
    return Path(folder)
