"""`dflash-check probe`: is speculation engaged on a running vLLM / SGLang server, how well does it accept,
is it lossless?"""

from __future__ import annotations

import sys

import click

from dflash_compat.exceptions import InputError
from dflash_compat.inputs import FiniteFloatRange

__all__ = ["probe_cmd"]



@click.command("probe", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("url")
@click.option("--model", "-m", required=True,
              help="The served model name to send completions to (see the server's /v1/models).")
@click.option("--engine", type=click.Choice(("auto", "vllm", "sglang", "llama.cpp")), default="auto",
              show_default=True,
              help="The server's engine; auto tells vLLM and llama.cpp by their vllm: / llamacpp: metrics and SGLang "
              "by /server_info.")
@click.option("--prompts", "prompts_path", type=click.Path(dir_okay=False),
              help='A JSONL file of prompts: one per line, a string, {"prompt": "..."} or {"prompt_ids": [1, 2, 3]}. '
              "Default: four built-in prompts.")
@click.option("--max-tokens", type=click.IntRange(min=1, max=2**31 - 1), default=128, show_default=True,
              help="Tokens to generate per prompt (EOS is ignored).")
@click.option("--timeout", type=FiniteFloatRange(min=0.1, max=600), default=60.0, show_default=True,
              help="Seconds each request may take, answer included; a server that does not answer in time is an "
              "error.")
@click.option("--reference", "reference_target",
              help="A local copy of the TARGET (small enough to run here): every output "
              "is compared token for token with its own greedy output.")
@click.option("--draft", "-d",
              help="With --reference: the draft, to report the reference runtime's own acceptance next to the "
              "server's.")
@click.option("--min-acceptance", type=FiniteFloatRange(min=0),
              help="Fail (exit 1) when the mean acceptance length tau is below this.")
@click.option("--profile-out", type=click.Path(dir_okay=False),
              help="Write the measured per-position acceptance profile "
              "to this JSON file, for `dflash-check recommend` (never through a symlink, never into a model folder; "
              "an existing file only if it is a previous profile).")
@click.option("--force", is_flag=True,
              help="Let --profile-out replace a file or symlink that is not a previous profile.")
@click.option("--format", "-f", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="text: a summary; json: server, results and summary as data.")
@click.option("--token", envvar="HF_TOKEN", help="Hugging Face token when --reference is a Hub repo id.")
@click.option("--trust-remote-code", is_flag=True, help="Allow the reference target repo's own Python code.")
def probe_cmd(url, model, engine, prompts_path, max_tokens, timeout, reference_target, draft, min_acceptance,
              profile_out, force, fmt, token, trust_remote_code) -> None:
    """Measure a running OpenAI-compatible vLLM or SGLang server at URL (e.g. http://127.0.0.1:8000):
    send a few greedy completions, read the engine's own speculative-decoding counters before and
    after, and report whether speculation is engaged, the mean acceptance length tau (in the
    engine's counting), per-position acceptance and tokens/s. With --reference, also whether every
    output equals the target's own greedy output token for token.

    Requests go to URL only (no proxies, no redirects).

    Exit codes: 0 passed; 1 speculation not active, not lossless, or tau under --min-acceptance;
    2 bad input, or a server that refuses, times out or answers something unreadable.
    """
    from dflash_compat.liveprobe.http import parse_url
    from dflash_compat.liveprobe.probe import ProbeRequest, probe_exit_code, read_prompts, run_probe

    parse_url(url)  # the whole URL checked before any file is read, model loaded or connection made
    if draft and not reference_target:
        raise InputError("--draft needs --reference TARGET (the draft runs next to the local target)")
    if profile_out:  # refused before the run that would fill it
        from dflash_compat.files.safe_write import model_folders
        from dflash_compat.liveprobe.profile import check_profile_out

        protected = model_folders(reference_target, draft)
        check_profile_out(profile_out, force=force, protected=protected)
    req = ProbeRequest(url=url, model=model, prompts=read_prompts(prompts_path), max_tokens=max_tokens,
                       timeout=timeout, engine=engine)
    reference = None
    if reference_target:
        from dflash_compat.liveprobe.reference import load_reference

        reference = load_reference(reference_target, draft, token=token, trust_remote_code=trust_remote_code)
    payload = run_probe(req, reference)
    if profile_out:
        from dflash_compat.liveprobe.profile import profile_from_probe, write_profile

        write_profile(profile_out, profile_from_probe(payload), force=force, protected=protected)
    if fmt == "json":
        from dflash_compat.emitters._safe import dumps

        click.echo(dumps(payload), nl=False)
    else:
        from dflash_compat.liveprobe.render import render_probe
        from dflash_compat.terminal import make_console

        render_probe(payload, make_console(), min_acceptance)
    sys.exit(probe_exit_code(payload, min_acceptance))
