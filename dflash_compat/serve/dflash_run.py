"""One-shot DFlash generation with the dflash reference package's own model code, as `serve --engine mlx`
and `serve --engine transformers` print it:

    python -m dflash_compat.serve.dflash_run mlx|transformers --model T --draft D --block-size N PROMPT

Why not `dflash generate ...` (dflash 0.1.0's console script)? Four things in its CLI stop it from
running a local pair on a machine without CUDA, none of them in the model code:

- `dflash/cli.py:63`: the transformers path puts both models on `torch.device("cuda:0")`;
- `dflash/model_mlx.py:431`: `load_draft` sends every draft through `snapshot_download`, so a local
  folder is rejected as a repo id;
- `dflash/benchmark.py:63-71`: the prompt always goes through `tokenizer.apply_chat_template`, which
  raises for a tokenizer without a chat template;
- `dflash/benchmark.py:11`: the CLI imports `requests` (and `tqdm`), which `pip install --no-deps
  dflash==0.1.0` does not bring.

This runner calls the same functions the CLI calls (`dflash.model.dflash_generate`,
`dflash.model_mlx.load` / `load_draft` / `stream_generate`) and differs only there: the device is
CUDA when there is one, else the CPU (float32); a local draft folder is read in place; a tokenizer
without a chat template gets the prompt as plain text (said on stderr). It imports neither
`dflash.benchmark` nor `requests`.

Needs: `pip install --no-deps dflash==0.1.0` plus the extra of the backend (`dflash-compat[torch]` or
`dflash-compat[mlx]`). Not imported by anything else in dflash_compat.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

__all__ = ["main", "build_parser"]

DEFAULT_MAX_NEW_TOKENS = 128


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m dflash_compat.serve.dflash_run",
                                description="Generate one response with a DFlash pair (dflash 0.1.0's model code).")
    p.add_argument("backend", choices=("mlx", "transformers"))
    p.add_argument("--model", required=True, help="the target: a local folder or a Hub repo id")
    p.add_argument("--draft", required=True, help="the DFlash draft: a local folder or a Hub repo id")
    p.add_argument("--block-size", type=int, help="tokens verified per step (default: the draft's block_size)")
    p.add_argument("--max-new-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS)
    p.add_argument("--temperature", type=float, default=0.0, help="0 for greedy decoding")
    p.add_argument("--device", help="transformers: a torch device (default: cuda:0 when there is one, else cpu)")
    p.add_argument("--system", help="a system message (used only with a chat template)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="transformers: allow the target repo's own code (dflash's CLI has no such option)")
    p.add_argument("prompt")
    return p


def _prompt_text(tokenizer, prompt: str, system: Optional[str]) -> str:
    """The chat template when the tokenizer has one (what dflash/benchmark.py:63-71 does), else the raw prompt."""
    if getattr(tokenizer, "chat_template", None):
        messages = ([{"role": "system", "content": system}] if system is not None else [])
        messages.append({"role": "user", "content": prompt})
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    print("dflash_run: the target's tokenizer has no chat template: the prompt is used as plain text",
          file=sys.stderr)
    return prompt


def _stop_ids(model, tokenizer) -> Optional[list[int]]:
    """EOS ids as dflash/benchmark.py's stop_token_ids reads them (generation config first, then the tokenizer)."""
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if ids is None:
        ids = tokenizer.eos_token_id
    if ids is None:
        return None
    return [ids] if isinstance(ids, int) else list(ids)


def _run_transformers(args) -> None:
    import torch
    from dflash.model import DFlash2DraftModel, DFlashDraftModel, dflash_generate
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    device = torch.device(args.device or ("cuda:0" if torch.cuda.is_available() else "cpu"))
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    trust = args.trust_remote_code
    target = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation="sdpa",
                                                  trust_remote_code=trust)
    target = target.to(device).eval()
    arch = AutoConfig.from_pretrained(args.draft).architectures or []
    cls = DFlash2DraftModel if "DFlash2DraftModel" in arch else DFlashDraftModel
    draft = cls.from_pretrained(args.draft, dtype=dtype, attn_implementation="sdpa").to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model, trust_remote_code=trust)
    text = _prompt_text(tokenizer, args.prompt, args.system)
    input_ids = tokenizer.encode(text, return_tensors="pt", add_special_tokens=False).to(device)
    out = dflash_generate(draft, target, input_ids, args.max_new_tokens, _stop_ids(target, tokenizer),
                          args.temperature, block_size=args.block_size)
    print(tokenizer.decode(out[0, input_ids.shape[1]:], skip_special_tokens=True))


def _run_mlx(args) -> None:
    import mlx.core as mx
    from dflash import model_mlx

    hub_download = model_mlx.snapshot_download

    def local_or_hub(repo_id, **kwargs):
        # a local folder is read in place; anything else goes to the Hub as dflash does
        return repo_id if os.path.isdir(repo_id) else hub_download(repo_id, **kwargs)

    mx.random.seed(0)
    model_mlx.snapshot_download = local_or_hub
    try:
        model, tokenizer = model_mlx.load(args.model)
        draft = model_mlx.load_draft(args.draft)
    finally:
        model_mlx.snapshot_download = hub_download
    text = _prompt_text(tokenizer, args.prompt, args.system)
    for response in model_mlx.stream_generate(model, draft, tokenizer, text, block_size=args.block_size,
                                              max_tokens=args.max_new_tokens, temperature=args.temperature):
        print(response.text, end="", flush=True)
    print()


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        import dflash  # noqa: F401
    except ImportError:
        print("dflash_run: the dflash package is not installed: pip install --no-deps dflash==0.1.0",
              file=sys.stderr)
        return 2
    (_run_mlx if args.backend == "mlx" else _run_transformers)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
