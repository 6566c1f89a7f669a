"""Which scaled-dot-product-attention kernels the PyTorch runtime lets torch use, for target and draft.

Why: speculative decoding changes the attention shapes every step (the caches grow by the accepted
count, the verify block sits at a new offset). On Hopper, torch sends bfloat16 SDPA to cuDNN, which
builds a graph for every new (query length, key length): measured on an H200 (2026-12-04, torch
2.11), 5.0 ms a call in bf16 against 0.18 ms in float32, a bf16 smoke 0.71-0.80x "speed-up". So on
CUDA the runtime puts flash and memory-efficient attention first and leaves cuDNN out, except with a
static cache, where the key length never changes (then cuDNN is allowed after the other two).

The choice is entered with torch's own context manager, `torch.nn.attention.sdpa_kernel(backends,
set_priority=True)` (torch 2.13 `torch/nn/attention/__init__.py:114-163`; `set_priority` orders the
listed kernels; older torch without it gets the same set, unordered). The context is entered around
every prefill / decode step (not across a stream's yields), so the caller's own code runs under its
own settings.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from dflash_compat.exceptions import InputError
from dflash_compat.runtime.core import ATTENTION_CHOICES

__all__ = ["AttentionPolicy", "attention_policy", "attention_context", "ATTENTION_CHOICES"]

# our names -> torch.nn.attention.SDPBackend members
_SDP_NAMES = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "math": "MATH",
              "cudnn": "CUDNN_ATTENTION"}
_CUDA_ONLY = ("efficient", "cudnn")


@dataclass(frozen=True)
class AttentionPolicy:
    """What was asked (`choice`) and the kernels torch may use, in priority order (`backends`;
    empty: torch's own choice, the context is not entered)."""

    choice: str
    backends: tuple[str, ...]
    device_type: str

    @property
    def label(self) -> str:
        """One line for the report: 'auto: flash > efficient > math (cuda)'."""
        kernels = " > ".join(self.backends) if self.backends else "torch's default"
        return f"{self.choice}: {kernels} ({self.device_type})"

    def as_dict(self) -> dict:
        return {"choice": self.choice, "kernels": list(self.backends), "device": self.device_type}


def attention_policy(choice: str = "auto", device_type: str = "cpu", *, static_cache: bool = False) -> AttentionPolicy:
    """The kernels a run may use. auto: on CUDA flash > efficient > math (cuDNN after efficient only
    with a static cache, whose shapes are fixed); on CPU flash > math (the two CPU kernels); other
    devices: torch's default. A named kernel comes first, math after it as the fallback for shapes it
    does not take (flash takes no attention mask)."""
    if choice not in ATTENTION_CHOICES:
        raise InputError(f"attention {choice!r}: expected one of {', '.join(ATTENTION_CHOICES)}")
    if choice == "auto":
        if device_type == "cuda":
            backends: tuple[str, ...] = ("flash", "efficient", "cudnn", "math") if static_cache else \
                ("flash", "efficient", "math")
        elif device_type == "cpu":
            backends = ("flash", "math")
        else:
            backends = ()
    else:
        if choice in _CUDA_ONLY and device_type != "cuda":
            raise InputError(f"attention {choice!r} is a CUDA kernel; on {device_type} use auto, flash or math")
        backends = (choice,) if choice == "math" else (choice, "math")
    return AttentionPolicy(choice, backends, device_type)


def _has_priority() -> bool:
    from torch.nn.attention import sdpa_kernel

    target = getattr(sdpa_kernel, "__wrapped__", sdpa_kernel)
    return "set_priority" in inspect.signature(target).parameters


@contextmanager
def attention_context(policy: AttentionPolicy) -> Iterator[AttentionPolicy]:
    """Run the enclosed forwards with the policy's kernels (nothing entered for torch's default)."""
    if not policy.backends:
        yield policy
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    kernels = [getattr(SDPBackend, _SDP_NAMES[b]) for b in policy.backends]
    extra = {"set_priority": True} if _has_priority() else {}
    with sdpa_kernel(kernels, **extra):
        yield policy
