"""`DraftWeights`: what the draft's safetensors headers say (names, dtypes, shapes; never the data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

__all__ = ["DraftWeights"]


@dataclass(frozen=True)
class DraftWeights:
    """The draft's tensors as its safetensors headers list them (only built when the headers were read)."""

    files: tuple[str, ...] = ()
    tensor_count: int = 0
    dtype: Optional[str] = None  # the dtype holding most parameters
    dtypes: tuple[str, ...] = ()
    shapes: Mapping[str, list[int]] = field(default_factory=dict)  # tensor name -> shape
    tensor_dtypes: Mapping[str, str] = field(default_factory=dict)
    tensor_files: Mapping[str, str] = field(default_factory=dict)  # tensor name -> the file holding it
    # file -> (data bytes present, data bytes its header declares), for files cut short
    incomplete: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)  # the first file's __metadata__ (e.g. format)
