"""DF901: a flag the engine release the launch runs does not accept, or has removed."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation
from dflash_compat.quoting import quote


def _known(name: str, flags: dict, underscores: bool, python: bool = True) -> bool:
    if name in flags:
        return True
    if python and name.startswith("--") and "=" not in name:
        # argparse takes a unique prefix of a long flag (allow_abbrev defaults to True in both parsers)
        if len([f for f in flags if f.startswith(name)]) == 1:
            return True
    if underscores:  # vLLM: `--no-x` for a boolean `--x`, `--x.y` for a key of the config `--x`, -O levels
        if name.startswith("--no-") and "--" + name[5:] in flags:
            return True
        if "." in name and name.split(".", 1)[0] in flags:
            return True
        if name.startswith("-O"):
            return True
    return False


def check(ctx):
    # here, not at the top: only a check of a launch command needs the flag facts and difflib (start-up)
    import difflib

    release = ctx.engine(ctx.launch.engine)
    facts = ctx.flags(release.engine)
    if facts is None:
        return
    engine, version = release.engine, ctx.engine_versions[release.engine].requested
    flags, removed = facts["flags"], facts.get("removed", {})
    for opt in ctx.launch.opts:
        name = opt.name
        python = engine != "llama.cpp"
        if opt.flag.unresolved and "$" in name or _known(name, flags, facts.get("underscores", False), python) \
                or name in ctx.launch.entry_flags:
            continue
        loc = ctx.at(word=opt.flag)
        if name in removed:
            path, line, hint = removed[name]
            yield Violation(f"{name} was removed from {engine} ({version}: {path}:{line} refuses it: "
                            f"\"{hint}\"); the server stops at start-up", [loc],
                            fix=f"Replace {name}: {hint}.")
            continue
        elsewhere = [v for v in release.flag_window if v != version
                     and _known(name, (ctx.engine(engine, v).flags or {}).get("flags", {}),
                                facts.get("underscores", False), python)]
        known = f" (it exists in {engine} {', '.join(elsewhere)})" if elsewhere else ""
        near = difflib.get_close_matches(name, list(flags), n=1, cutoff=0.75)
        hint = f"; did you mean {near[0]}?" if near else ""
        yield Violation(f"{quote(name)} is not an option of {engine} {version}{known}: its argument parser rejects "
                        f"it and the server does not start{hint}", [loc],
                        fix=f"Write {near[0]} instead." if near else None)


RULE = Rule(
    code="DF901",
    name="launch-flag-unknown",
    severity="error",
    backends=("vllm", "sglang", "llama.cpp"),
    check=check,
    needs=("launch",),
    what="Every flag of the launch command is one the engine release it runs (image tag, pip pin or "
    "--engine-version) declares, and not one that release keeps only to refuse it.",
    why="Engines rename and remove flags between releases (llama.cpp removed --draft, --draft-n and --draft-max "
    "for --spec-draft-n-max; vLLM's and SGLang's parsers follow their config classes). An unknown flag stops "
    "the server at start-up, after the image was pulled and the weights downloaded.",
    example="llama-server -m target.gguf -md draft.gguf --spec-type draft-dflash --draft-max 15 (b11434)",
    fix="Use the flag the pinned release names (the finding says which), or pin the release the command "
    "was written for.",
    sources=(
        EngineSource("vllm", "vllm/engine/arg_utils.py", "959-1000", "EngineArgs.add_cli_args: the engine flags"),
        EngineSource("vllm", "vllm/utils/argparse_utils.py", "375-395", "underscores in flag names read as dashes"),
        EngineSource("sglang", "sglang/srt/arg_groups/arg_utils.py", "288-290", "a field's flag is --field-name"),
        EngineSource("sglang", "sglang/cli/serve.py", "30-59", "`sglang serve` takes --model-type itself",
                     version="0.5.23"),
        EngineSource("llama.cpp", "common/arg.cpp", "4411-4416", "--draft/--draft-n/--draft-max removed"),
    ),
)
