"""The draft's weight facts from safetensors headers only: local files, or the Hub's header API (HTTP range
requests through huggingface_hub). No tensor data is ever read."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from dflash_compat.exceptions import WeightsError, one_line
from dflash_compat.files.safetensors_header import FileHeader, _prod, read_local_headers
from dflash_compat.files.weightfiles import INDEX_FILE, PickledShardsError
from dflash_compat.modelfacts import DraftWeights, Skipped
from dflash_compat.quoting import quote_items
from dflash_compat.resolve.refs import Resolved

__all__ = ["inspect_draft_weights", "read_hub_headers", "summarize"]


def read_hub_headers(repo_id: str, revision: Optional[str] = None, token: Optional[str] = None,
                     api: Any = None) -> list[FileHeader]:
    """Headers of a Hub repo's safetensors files, read remotely by huggingface_hub (HTTP range requests)."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    meta = api.get_safetensors_metadata(repo_id, revision=revision, token=token)
    headers = []
    for fname in sorted(meta.files_metadata):
        fmeta = meta.files_metadata[fname]
        h = FileHeader(name=fname, metadata=dict(fmeta.metadata or {}))
        end = 0
        for tname, info in fmeta.tensors.items():
            h.tensors[tname] = (str(info.dtype), [int(s) for s in info.shape])
            end = max(end, int(info.data_offsets[1]))
        h.data_bytes_declared = end
        headers.append(h)
    return headers


def summarize(headers: list[FileHeader]) -> DraftWeights:
    """Fold file headers into the DraftWeights facts the rules read."""
    shapes: dict[str, list[int]] = {}
    dtypes: dict[str, str] = {}
    where: dict[str, str] = {}
    params: dict[str, int] = {}
    incomplete: dict[str, tuple[int, int]] = {}
    metadata: dict[str, str] = {}
    for h in headers:
        metadata = metadata or h.metadata
        for tname, (dtype, shape) in h.tensors.items():
            shapes[tname] = shape
            dtypes[tname] = dtype
            where[tname] = h.name
            params[dtype] = params.get(dtype, 0) + _prod(shape)
        if h.data_bytes_present is not None and h.data_bytes_present < h.data_bytes_declared:
            incomplete[h.name] = (h.data_bytes_present, h.data_bytes_declared)
    main = max(params, key=lambda d: (params[d], d)) if params else None
    return DraftWeights(
        files=tuple(h.name for h in headers),
        tensor_count=len(shapes),
        dtype=main,
        dtypes=tuple(sorted(params)),
        shapes=shapes,
        tensor_dtypes=dtypes,
        tensor_files=where,
        incomplete=incomplete,
        metadata=metadata,
    )


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def inspect_draft_weights(resolved: Resolved, api: Any = None,
                          token: Optional[str] = None) -> Union[DraftWeights, Skipped]:
    """The draft's weight facts: local files first; for Hub drafts without local weights, the Hub header API."""
    try:
        headers = read_local_headers(resolved.folder, hub_snapshot=resolved.is_hub)
    except PickledShardsError as exc:  # DF007: the weights are not checked, and nothing was unpickled
        return Skipped("pickle-shards", f"{INDEX_FILE} lists {quote_items(exc.names)}, pickled weights that are "
                       "never opened")
    if not headers and resolved.is_hub:
        found = _hub_headers(resolved, api, token)
        if isinstance(found, Skipped):
            return found
        headers = found
    if not headers:
        has_bin = any(resolved.folder.glob("*.bin")) or any(resolved.folder.glob("*.pt"))
        if has_bin:
            return Skipped("pickle-only", "the draft ships only pickled .bin/.pt weights")
        return Skipped("no-safetensors", "the draft has no safetensors files")
    return summarize(headers)


def _hub_headers(resolved: Resolved, api: Any, token: Optional[str]) -> Union[list[FileHeader], Skipped]:
    if _hub_offline():
        return Skipped("hub-offline", "HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import errors as hf_errors
    except ImportError:  # pragma: no cover - a core dependency
        return Skipped("hub-unreachable", "huggingface_hub is not installed")
    from dflash_compat.resolve.hub import quiet

    try:
        with quiet():  # bounded timeouts, no retry noise on stderr
            return read_hub_headers(resolved.repo_id, resolved.revision, token, api=api)
    except hf_errors.NotASafetensorsRepoError:
        return Skipped("no-safetensors", "the repo has no safetensors files")
    except hf_errors.SafetensorsParsingError as exc:
        raise WeightsError(f"draft {resolved.ref}: corrupt safetensors header on the Hub ({one_line(exc)})") from None
    except (hf_errors.RepositoryNotFoundError, hf_errors.GatedRepoError) as exc:
        return Skipped("hub-unreachable", type(exc).__name__)
    except WeightsError:
        raise
    except Exception as exc:  # noqa: BLE001 - HTTP client errors (httpx, OSError, HfHubHTTPError, offline)
        # A network failure must not hide the config-level verdict: report the skip instead.
        return Skipped("hub-unreachable", f"Hub header request failed ({one_line(exc)})")
