"""The Hugging Face Hub, asked carefully: validated revisions, bounded timeouts, no retry noise, and
file sizes checked from the Hub's metadata before anything is downloaded.

huggingface_hub retries a failing request for about 25 s and logs every retry; its HTTP client waits
without a time limit. A preflight check must answer in seconds and in one line, so every Hub call of
dflash-check runs inside `quiet()`: one bounded timeout per request, the library's log below ERROR,
its warnings dropped. huggingface_hub is imported inside the functions.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from dflash_compat.exceptions import InputError, ResolutionError, error_line

__all__ = ["HUB_TIMEOUT_S", "MissingOnHub", "check_revision", "is_repo_id", "quiet", "fetch_files", "offline",
           "gguf_files", "read_hub_gguf_header"]

# Seconds one Hub request may take (connect, then each read); DFLASH_CHECK_HUB_TIMEOUT overrides it.
HUB_TIMEOUT_S = 5.0
_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_REF_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"^{_PART}/{_PART}$")


class MissingOnHub(ResolutionError):
    """The Hub repo exists but has no such file (e.g. a GGUF-only repo has no config.json)."""


def check_revision(revision: str, what: str) -> str:
    """`revision` if it is a commit hash (40 or 64 hex digits) or a valid git branch/tag name (git's
    check-ref-format rules: no `..`, no component starting with `.` or ending in `.lock`, no control
    characters, spaces or `~^:?*[\\`, no `@{`, no empty component); else InputError in one line.
    Checked before any request or cache access: the revision becomes a URL part and a cache path."""
    if not isinstance(revision, str) or not revision:
        raise InputError(f"{what}: an empty revision")
    shown = repr(revision[:80])
    if _COMMIT.match(revision):
        return revision
    parts = revision.split("/")
    bad = (
        len(revision) > 255
        or _REF_CHARS.search(revision) is not None
        or ".." in revision or "@{" in revision or revision == "@"
        or revision.endswith(".")
        or any(not p or p.startswith(".") or p.endswith(".lock") for p in parts)
    )
    if bad:
        raise InputError(f"{what}: revision {shown} is not a branch, tag or commit name")
    return revision


def is_repo_id(name: str) -> bool:
    """`org/name` as the Hub spells repo ids: ASCII letters, digits, `_.-`, 1-96 characters a part,
    starting and ending with a letter or digit, no `--` or `..`."""
    return bool(_REPO_ID.match(name)) and "--" not in name and ".." not in name


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _timeout() -> float:
    try:
        value = float(os.environ.get("DFLASH_CHECK_HUB_TIMEOUT", HUB_TIMEOUT_S))
    except ValueError:
        return HUB_TIMEOUT_S
    return value if 0 < value < 3600 else HUB_TIMEOUT_S


_installed: list[float] = []


def _bound_client() -> None:
    """Give huggingface_hub's HTTP client a timeout (its default waits for ever); once per timeout value.
    Older huggingface_hub releases (requests-based) have no client factory: they keep their own."""
    timeout = _timeout()
    if _installed and _installed[-1] == timeout:
        return
    try:
        from huggingface_hub import close_session, set_client_factory
        from huggingface_hub.utils import _http
        base = _http.default_client_factory
    except (ImportError, AttributeError):  # pragma: no cover - huggingface_hub < 1.0
        return

    def factory() -> Any:
        client = base()
        client.timeout = type(client.timeout)(timeout)
        return client

    set_client_factory(factory)
    close_session()
    _installed.append(timeout)


@contextmanager
def quiet() -> Iterator[None]:
    """Hub calls with a bounded timeout, the library's retry log lines and warnings silenced, and its
    telemetry off (it would ask the Hub for an agent registry first: one more request to wait for)."""
    import logging
    import warnings

    from huggingface_hub import constants

    _bound_client()
    logger = logging.getLogger("huggingface_hub")
    level, telemetry = logger.level, constants.HF_HUB_DISABLE_TELEMETRY
    logger.setLevel(logging.ERROR)
    constants.HF_HUB_DISABLE_TELEMETRY = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)
        constants.HF_HUB_DISABLE_TELEMETRY = telemetry


def _why_unreachable(exc: BaseException) -> str:
    """A network failure in a few words."""
    from huggingface_hub import errors as hf_errors

    if isinstance(exc, hf_errors.HfHubHTTPError) and getattr(exc, "response", None) is not None:
        return f"HTTP {exc.response.status_code}"
    if "Timeout" in type(exc).__name__:
        return f"no answer within {_timeout():g} s"
    return error_line(exc)


def _remote_sizes(repo_id: str, names: Sequence[str], revision: Optional[str], token: Optional[str],
                  who: str) -> dict[str, int]:
    """{file name: size in bytes} of those of `names` the repo has, from one paths-info request.
    ResolutionError for a missing or gated repo or revision; other failures propagate."""
    from huggingface_hub import HfApi
    from huggingface_hub import errors as hf_errors

    try:
        infos = HfApi().get_paths_info(repo_id, list(names), revision=revision, token=token)
    except hf_errors.GatedRepoError:
        raise ResolutionError(f"{who}: gated repo; accept its terms on the Hub and log in (hf auth login or HF_TOKEN)"
                              ) from None
    except hf_errors.RepositoryNotFoundError:
        raise ResolutionError(f"{who}: no such folder, and no Hub repo {repo_id} (or it is private: log in or "
                              "set HF_TOKEN)") from None
    except hf_errors.RevisionNotFoundError:
        raise ResolutionError(f"{who}: revision {revision!r} not found on the Hub") from None
    sizes = {}
    for info in infos:
        size = getattr(info, "size", None)
        if getattr(info, "path", None) in names and isinstance(size, int):
            sizes[info.path] = size
    return sizes


def _download(repo_id: str, name: str, revision: Optional[str], token: Optional[str], local_only: bool,
              who: str) -> Optional[Path]:
    """The cached (or freshly downloaded) file; None where the repo or the cache has no such file."""
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo_id, name, revision=revision, token=token, local_files_only=local_only,
                                    etag_timeout=_timeout()))
    except (hf_errors.EntryNotFoundError, hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled):
        return None
    except hf_errors.HFValidationError:
        raise ResolutionError(f"{who}: not a valid Hub repo id") from None
    except hf_errors.HfHubHTTPError as exc:
        raise ResolutionError(f"{who}: downloading {name} from the Hub failed ({_why_unreachable(exc)})") from None
    except (OSError, ValueError) as exc:  # a cache folder it cannot write, a name too long
        raise ResolutionError(f"{who}: cannot fetch {name} ({error_line(exc)})") from None


def fetch_files(repo_id: str, names: Sequence[str], *, revision: Optional[str], token: Optional[str],
                limit: int, who: str, required: str) -> dict[str, Path]:
    """Local paths of those of `names` the Hub repo has, each at most `limit` bytes by the Hub's own
    metadata (a larger file is refused before a byte of it is downloaded). Offline, or when the Hub
    cannot be reached, the local cache answers alone. ResolutionError in one line when `required`
    cannot be had, naming both readings of the argument (a folder, a Hub repo)."""
    with quiet():
        unreachable = "HF_HUB_OFFLINE is set" if offline() else None
        sizes: Optional[dict[str, int]] = None
        if unreachable is None:
            try:
                sizes = _remote_sizes(repo_id, names, revision, token, who)
            except ResolutionError:
                raise
            except Exception as exc:  # noqa: BLE001 - HTTP 5xx, timeouts, refused connections, proxies
                unreachable = _why_unreachable(exc)
        if sizes is not None:
            if required not in sizes:
                raise MissingOnHub(f"{who}: the Hub repo {repo_id} has no {required}")
            for name, size in sizes.items():
                if size > limit:
                    raise ResolutionError(f"{who}: {name} on the Hub is {size} bytes, more than the {limit} a "
                                          "config file may hold; not downloaded")
        wanted = [n for n in names if sizes is None or n in sizes]
        files = {}
        for name in wanted:
            path = _download(repo_id, name, revision, token, sizes is None, who)
            if path is not None:
                files[name] = path
    if required not in files:
        where = "is not in the local Hugging Face cache" if offline() else "could not be reached"
        raise ResolutionError(f"{who}: not a local folder, and the Hub repo {repo_id} {where} "
                              f"({unreachable or 'the download failed'}); "
                              "download it first or pass a folder")
    return files


def gguf_files(repo_id: str, *, revision: Optional[str], token: Optional[str], who: str, api: Any = None) -> list[str]:
    """The GGUF files of a Hub repo (a split model's first shard only), sorted."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    try:
        with quiet():
            names = api.list_repo_files(repo_id, revision=revision, token=token)
    except Exception as exc:  # noqa: BLE001 - HTTP errors, timeouts, offline
        raise ResolutionError(f"{who}: cannot list the Hub repo {repo_id} ({error_line(exc)})") from None
    out = []
    for name in names:
        low = name.lower()
        if not low.endswith(".gguf") or re.search(r"-0*(?:[2-9]|\d{2,})-of-\d+\.gguf$", low):
            continue  # a split GGUF's later shards hold no metadata of their own
        out.append(name)
    return sorted(out)


def read_hub_gguf_header(repo_id: str, filename: str, *, revision: Optional[str], token: Optional[str],
                         fs: Any = None) -> Any:
    """The header of a GGUF file on the Hub, read front to back by HTTP range requests (1 MiB blocks)
    through huggingface_hub's file system, never the whole file; GGUFHeader (gguf_header.py bounds)."""
    from dflash_compat.files.gguf_header import parse_gguf_header

    if fs is None:
        from huggingface_hub import HfFileSystem

        fs = HfFileSystem(token=token)
    rev = f"@{revision}" if revision else ""
    with quiet():
        with fs.open(f"{repo_id}{rev}/{filename}", "rb", block_size=1 << 20) as fh:
            return parse_gguf_header(fh, filename)
