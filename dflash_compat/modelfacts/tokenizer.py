"""`TokenizerFacts`: the target's tokenizer as llama.cpp's converter sees it, and the converter command that
names its pre-tokenizer when the converter's table does not know it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

__all__ = ["TokenizerFacts", "converter_argv"]


@dataclass(frozen=True)
class TokenizerFacts:
    """`chkhsh`: SHA-256 of str(token ids) of the converter's fixed text (`chktxt`), exactly as
    convert_hf_to_gguf.py's get_vocab_base_pre computes it (AutoTokenizer.from_pretrained(dir).encode); the
    converter writes tokenizer.ggml.pre from its table of these hashes and stops on any other.
    `pre_tokenizer`: the llama.cpp pre-tokenizer whose split tokenizer.json's pre_tokenizer is (None: none we
    can name, so no workaround)."""

    folder: str
    model: Optional[str]  # tokenizer.json model.type: "BPE", "Unigram", "WordPiece"
    sentencepiece: bool  # a tokenizer.model file: the SentencePiece path the converter tries first for many classes
    chkhsh: Optional[str]
    pre_tokenizer: Optional[str] = None

    @property
    def bpe(self) -> bool:
        """Whether the converter hashes it: a BPE tokenizer.json with no SentencePiece model beside it."""
        return self.model == "BPE" and not self.sentencepiece


# Runs the build's own convert_hf_to_gguf.py, unchanged except that the method that hashes the tokenizer
# answers with the named pre-tokenizer (from the llama.cpp source tree; arguments as for the converter).
_RUN = ('import runpy, sys; sys.path.insert(1, "gguf-py"); import {module} as m; '
        'm.{cls}.get_vocab_base_pre = lambda self, tokenizer: "{pre}"; sys.argv[0] = "convert_hf_to_gguf.py"; '
        'runpy.run_path(sys.argv[0], run_name="__main__")')


def converter_argv(args: Sequence[str], pre: Optional[str] = None, hook: Optional[dict] = None) -> list[str]:
    """`python convert_hf_to_gguf.py ARGS...`, or with `pre` (and the build's `hook`: {"module", "class"} of
    get_vocab_base_pre, from the engine facts) the one-line command that names the pre-tokenizer."""
    if pre is None or hook is None:
        return ["python", "convert_hf_to_gguf.py", *args]
    for value in (pre, hook["module"], hook["class"]):  # names from the facts and our own table, never a config
        if not value.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"not a plain name: {value!r}")
    return ["python", "-c", _RUN.format(module=hook["module"], cls=hook["class"], pre=pre), *args]
