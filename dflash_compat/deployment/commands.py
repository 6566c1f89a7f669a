"""One deployment from whichever door it comes in by: a line of a launch file, `launch -c`, `serve`'s printed
command, `check --launch 'CMD'`, or check's own options. Every engine command is read by the one parser per
engine (`dflash_compat.launch.parse`: its entry point, its flags and their spellings per engine), then turned
into the same `CheckOptions` the rules read, so the same deployment gives the same findings at every door.

A whole command is `complete`: an option it does not give is the engine's default, not "not given here" (a
rule that says the engine stops at start-up without an option is an error there, an info for check's own
options, which may leave out what the launch passes)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional, Sequence, Union

from dflash_compat.deployment.options import CheckOptions
from dflash_compat.exceptions import InputError

__all__ = ["command_options", "options_of", "parse_command"]


def _num(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def options_of(launch: Any, **inspect: Any) -> CheckOptions:
    """The CheckOptions a launch's settings mean (what `check --tp ... --num-speculative-tokens ...` would
    have been given), `complete` unless a word of it comes from a variable the file does not define (it may
    hide more flags). `inspect`: how the check inspects (deep, token, ...)."""
    s = launch.settings

    def num(name: str) -> Optional[int]:
        return _num(s.get(name))

    out: dict[str, Any] = {"tp": num("tp") or 1, "pp_size": num("pp") or 1}
    if launch.engine == "vllm":
        out.update(num_speculative_tokens=num("num_speculative_tokens"), draft_tp=num("draft_tp"),
                   max_num_seqs=num("max_num_seqs"), max_num_batched_tokens=num("max_num_batched_tokens"))
    elif launch.engine == "sglang":
        attn_dp = num("attn_dp_size")
        if attn_dp is None and s.get("enable_dp_attention") and num("dp"):
            attn_dp = num("dp")  # --dp-size N --enable-dp-attention: the old spelling of --attn-dp-size N
        out.update(sglang_num_draft_tokens=num("num_draft_tokens"), sglang_dflash_block_size=num("dflash_block_size"),
                   sglang_draft_window_size=num("draft_window_size"), sglang_attn_dp_size=attn_dp,
                   sglang_enable_dp_lm_head=bool(s.get("enable_dp_lm_head")), max_num_seqs=num("max_num_seqs"),
                   sglang_quantization=s.get("quantization") if isinstance(s.get("quantization"), str) else None,
                   sglang_draft_quantization=s.get("draft_quantization")
                   if isinstance(s.get("draft_quantization"), str) else None,
                   sglang_draft_attention_backend=s.get("draft_attention_backend")
                   if isinstance(s.get("draft_attention_backend"), str) else None,
                   sglang_attn_cp_size=num("attn_cp_size"))
    elif launch.engine == "llama.cpp":
        out.update(llamacpp_draft_n_max=num("n_max"))
    hidden = any(w.unresolved and w.text.startswith(("$", "`")) for w in launch.words)
    return CheckOptions(**out, engine=launch.engine, complete=not hidden, **inspect)


def parse_command(command: Union[str, Sequence[str]], where: str = "--launch") -> Any:
    """The engine launch in one command (a shell string, or an argv as `serve` prints it): the Launch the
    launch rules read. InputError (one line) when it launches no engine the checker knows."""
    from dflash_compat.launch.parse import find_launch
    from dflash_compat.launch.sources import candidates
    from dflash_compat.quoting import quote

    if not isinstance(command, str):
        import shlex

        command = " ".join(shlex.quote(str(a)) for a in command)
    _, cands = candidates("<command>", command)
    found = [launch for c in cands if (launch := find_launch(c)) is not None]
    if not found:
        raise InputError(f"{where} {quote(command)}: launches no engine the checker knows (vllm serve, "
                         "python -m sglang.launch_server, sglang serve, llama-server, ...)")
    if len(found) > 1:
        raise InputError(f"{where}: {len(found)} engine launches in one command; give one")
    return found[0]


def command_options(command: Union[str, Sequence[str]], base: Optional[CheckOptions] = None,
                    where: str = "--launch") -> tuple[Any, CheckOptions]:
    """(the launch, the options it means) for a command, keeping `base`'s inspection settings."""
    launch = parse_command(command, where)
    inspect = {}
    if base is not None:
        inspect = dict(deep=base.deep, trust_remote_code=base.trust_remote_code, adapter=base.adapter,
                       token=base.token)
    return launch, options_of(launch, **inspect)


def with_engine(options: CheckOptions, engine: Optional[str], complete: bool) -> CheckOptions:
    return replace(options, engine=engine, complete=complete)
