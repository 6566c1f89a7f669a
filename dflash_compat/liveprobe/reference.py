"""The one place the serving commands use the reference runtime (PyTorch): load a local pair, greedy
and speculative generation, the target's tokenizer; and the replay proposer.

The replay proposer wraps a real draft (its forward still runs, so a step costs what a draft pass
costs) but proposes the target's own greedy continuation, each token replaced by a wrong one with
probability `error_rate`: a draft that really accepts, with per-position acceptance (1 - e)^k, for
the stand-in test servers and the recommend benchmark. torch is imported inside the functions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from dflash_compat.exceptions import InputError

__all__ = ["Reference", "load_reference", "encode", "decode", "greedy", "speculative", "ReplayProposer",
           "stats_of"]

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


@dataclass
class Reference:
    """A loaded local target (adapter), optionally its draft and tokenizer."""

    target: Any
    draft: Any = None
    tokenizer: Any = None
    folder: Optional[Path] = None

    @property
    def vocab_size(self) -> int:
        return int(self.target.vocab_size)


def _runtime():
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        from dflash_compat.exceptions import MissingDependencyError

        raise MissingDependencyError(
            "--reference needs torch and transformers: pip install 'dflash-compat[torch]'") from None
    from dflash_compat.runtime import torch_generate

    return torch_generate


def load_reference(target: str, draft: Optional[str] = None, *, token: Optional[str] = None,
                   trust_remote_code: bool = False, device: str = "cpu") -> Reference:
    """Load TARGET (safetensors only) in float32 on `device`, its tokenizer if it has one, and DRAFT."""
    rt = _runtime()
    import torch
    import transformers

    from dflash_compat.resolve.refs import download_weights, resolve

    transformers.utils.logging.disable_progress_bar()  # a weight-loading bar would break the one-screen report

    folder = download_weights(resolve(target, "target", token=token), token=token, trust_remote_code=trust_remote_code)
    adapter = rt.load_target(folder, device=device, dtype=torch.float32, trust_remote_code=trust_remote_code)
    loaded_draft = rt.load_draft(draft, device=device, dtype=torch.float32, token=token) if draft else None
    tokenizer = None
    if any((folder / name).is_file() for name in _TOKENIZER_FILES):
        from dflash_compat.files.safe_read import check_tokenizer_files

        check_tokenizer_files(folder, f"--reference {target}")  # bounded, typed JSON before transformers parses it
        try:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(folder))
        except Exception:  # noqa: BLE001 - a foreign parser on an untrusted file (tokenizers raises bare Exception)
            tokenizer = None  # compared by token ids only; text prompts then need a tokenizer
    return Reference(adapter, loaded_draft, tokenizer, folder)


def encode(ref: Reference, text: str) -> list[int]:
    if ref.tokenizer is None:
        raise InputError("the reference target has no tokenizer: give prompts as token ids ({\"prompt_ids\": [...]})")
    ids = list(ref.tokenizer(text, add_special_tokens=False)["input_ids"])
    if not ids:
        raise InputError(f"prompt {text[:30]!r} encodes to no tokens")
    return ids


def decode(ref: Reference, ids: Sequence[int]) -> Optional[str]:
    return ref.tokenizer.decode(list(ids)) if ref.tokenizer is not None else None


def greedy(ref: Reference, ids: Sequence[int], max_new_tokens: int) -> list[int]:
    """The target's own greedy continuation, with no stop token (the server is asked to ignore EOS)."""
    rt = _runtime()
    return list(rt.greedy_generate(ref.target, list(ids), max_new_tokens=max_new_tokens, timed=False).tokens)


def speculative(ref: Reference, ids: Sequence[int], max_new_tokens: int, block_size: Optional[int] = None,
                draft: Any = None) -> Any:
    """DFlash greedy decoding with the reference runtime -> GenerationResult (tokens, stats)."""
    rt = _runtime()
    return rt.spec_generate(draft if draft is not None else ref.draft, ref.target, list(ids),
                            max_new_tokens=max_new_tokens, block_size=block_size)


def stats_of(result: Any) -> dict[str, list[int]]:
    """Per-step counts of a GenerationResult: committed tokens, accepted drafts, drafted tokens."""
    s = result.stats
    return {"acceptance_lengths": list(s.acceptance_lengths), "accepted": list(s.accepted), "drafted": list(s.drafted)}


class ReplayProposer:
    """Makes a loaded v1 draft propose `sequence[p]` for every block position p (the target's greedy
    sequence: prompt + continuation), each replaced by another token with probability `error_rate`.
    The draft's own forward and logits still run first (a real draft pass's cost).

    It hooks the draft instance's `forward` (to learn the block's start position) and
    `compute_logits` (to replace the logits by a one-hot on the proposal): runtime/torch_draft.py
    DFlashDraftModel.forward(noise, features, start, cache) and .compute_logits(hidden, head).
    """

    def __init__(self, draft: Any, error_rate: float, seed: int = 0) -> None:
        if not 0.0 <= error_rate <= 1.0:
            raise InputError("error_rate must be in [0, 1]")
        if getattr(draft, "candidate_selector", None) is not None:
            raise InputError("the replay proposer wraps v1 drafts only")
        self.draft = draft
        self.error_rate = error_rate
        self.rng = random.Random(seed)
        self.sequence: list[int] = []
        self._start = 0
        self._forward, self._logits = draft.forward, draft.compute_logits
        draft.forward = self._hook_forward
        draft.compute_logits = self._hook_logits

    def follow(self, sequence: Sequence[int]) -> None:
        """The full greedy sequence (prompt ids + the target's greedy continuation) to replay."""
        self.sequence = list(sequence)

    def _hook_forward(self, noise, features, start, cache):
        self._start = int(start)  # block position 0 is the last committed token, at `start`
        return self._forward(noise, features, start, cache)

    def _hook_logits(self, hidden, head):
        import torch

        logits = self._logits(hidden, head)  # [1, size-1, V]: the real pass, then overridden
        vocab = logits.shape[-1]
        forced = torch.full_like(logits, float("-inf"))
        for j in range(logits.shape[1]):
            pos = self._start + 1 + j  # draft position j+1 predicts sequence position start+1+j
            token = self.sequence[pos] if pos < len(self.sequence) else 0
            if self.rng.random() < self.error_rate:
                token = (token + 1 + self.rng.randrange(vocab - 1)) % vocab  # any other token
            forced[0, j, token] = 0.0
        return forced
