"""DF910: a launch whose pair could not be checked."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, Violation

# what to do about each kind of reason (launch/run.py `_pair`)
_FIXES = {
    "option": "Leave out --no-pair to check the pair too.",
    "variable": "State the model in the file (a default works: ${MODEL:-org/name}) or check the pair on its own: "
    "dflash-check TARGET --draft DRAFT.",
    "no-draft": "Name the draft model the launch runs (vLLM: \"model\" in --speculative-config; SGLang: "
    "--speculative-draft-model-path; llama.cpp: -md).",
    "no-target": "Name the target model the launch serves.",
    "not-dflash": "Nothing to do if this launch is not meant to run a DFlash draft.",
    "unreadable": "Judge it where the models can be read: give local folders (or GGUF files) in the launch or "
    "to `dflash-check TARGET --draft DRAFT`; or read them once with Hub access (HF_TOKEN for a gated repo) and "
    "judge offline from the Hugging Face cache with HF_HUB_OFFLINE=1.",
}


def check(ctx):
    reason = getattr(ctx, "pair_skipped", None)
    kind = getattr(ctx, "pair_skip_kind", "")
    if not reason or kind == "not-speculative":
        return
    at = ctx.at("draft" if "draft" in ctx.launch.where else None)
    if kind == "unreadable":
        # a DFlash pair nobody judged: a warning, so that --strict fails it (offline CI passes nothing unseen)
        yield Violation(f"the pair was not judged: {reason}", [at], fix=_FIXES[kind], severity="warning")
        return
    yield Violation(f"the pair was not checked: {reason}", [at], fix=_FIXES.get(kind))


RULE = Rule(
    code="DF910",
    name="launch-pair-not-checked",
    severity="info",
    backends=(COMMON,),
    check=check,
    needs=("launch",),
    what="The target and draft of each launch are checked by every rule `dflash-check TARGET --draft DRAFT` runs "
    "for that engine (GGUF files for llama.cpp: their headers); when they cannot be (a model that cannot be read, "
    "a value from a variable), "
    "the report says why. A launch without a draft or any speculative setting has no pair and gets nothing.",
    why="A launch report without the pair's findings would read as a clean pair; this line marks what was not "
    "looked at. A pair whose models could not be read (offline, not in the cache, a private repo without a "
    "token) is a warning, so that `--strict` fails it; the other reasons are infos.",
    example="vllm serve $MODEL --speculative-config '{\"method\": \"dflash\", \"model\": \"$DRAFT\"}'",
    fix="Make the models reachable (a local folder, or the Hub with a token) or check the pair separately with "
    "`dflash-check TARGET --draft DRAFT`.",
)
