"""DF912: a speculative method / algorithm / type the engine release's parser refuses (`"method": "DFlash"`)."""

from __future__ import annotations

import json

from dflash_compat.checker import EngineSource, Rule, Violation
from dflash_compat.quoting import quote

# the launch setting each engine names its speculative method with
_SETTING = {"vllm": "method", "sglang": "algorithm", "llama.cpp": "spec_type"}


def _spelled(engine: str, name: str) -> str:
    """How the launch writes the method: `"method": "dflash"` in vLLM's JSON, a flag's value otherwise."""
    if engine == "vllm":
        return f'"method": {json.dumps(name)}'
    return f"{'--speculative-algorithm' if engine == 'sglang' else '--spec-type'} {quote(name)}"


def _near(name: str, accepted: list[str], exact: bool) -> str | None:
    """The accepted name this one most likely means: the same but for case, a name it is a part of
    (`dflash` -> `draft-dflash`), or a close spelling (`dflash2` -> `dflash`)."""
    import difflib

    low = name.lower()
    same = [a for a in accepted if a.lower() == low]
    if same:
        return same[0]
    parts = [a for a in accepted if low in a.lower().replace("_", "-").split("-")]
    if len(parts) == 1:
        return parts[0]
    close = difflib.get_close_matches(name if exact else name.upper(), accepted, n=1, cutoff=0.75)
    return close[0] if close else None


def check(ctx):
    launch = ctx.launch
    flags = ctx.flags(launch.engine) if launch.engine in _SETTING else None
    if flags is None:
        return
    setting = _SETTING[launch.engine]
    facts = flags.get("values", {}).get(setting)
    value = launch.settings.get(setting)
    if not facts or not isinstance(value, str) or setting in launch.unresolved:
        return
    accepted = facts["accepted"]
    exact = facts["case_sensitive"]
    path, line = facts["source"]
    engine, version = launch.engine, ctx.engine_versions[launch.engine].requested
    names = value.split(facts["separator"]) if facts.get("separator") else [value]
    for name in names:
        if name in accepted or not exact and name.upper() in {a.upper() for a in accepted}:
            continue
        near = _near(name, accepted, exact)
        if facts.get("plugins") and near is None:
            # an engine that takes a plugin's own method: a name like no built-in one may be a plugin's
            yield Violation(f"{_spelled(engine, name)} is no built-in speculative method of {engine} {version} "
                            f"({path}:{line}); it starts only where a plugin registers that name",
                            [ctx.at(setting)], severity="warning",
                            fix="Use a built-in method (DFlash: \"dflash\") or install the plugin that registers it.")
            continue
        how = "matches the names exactly, case included" if exact else "upper-cases the name and matches it"
        told = f"; did you mean {_spelled(engine, near)}?" if near else ""
        yield Violation(f"{_spelled(engine, name)} is refused by {engine} {version}: its parser {how} "
                        f"({path}:{line}) and the server stops at start-up{told}", [ctx.at(setting)],
                        fix=f"Write {_spelled(engine, near)}." if near else f"Use one of: {', '.join(accepted)}.")


RULE = Rule(
    code="DF912",
    name="launch-speculative-method-refused",
    severity="error",
    backends=("vllm", "sglang", "llama.cpp"),
    check=check,
    needs=("launch",),
    what="The speculative method the launch names is one the engine release's parser accepts, spelled as it "
    "accepts it: vLLM's `method` in --speculative-config, SGLang's --speculative-algorithm, llama.cpp's "
    "--spec-type.",
    why="vLLM checks `method` against a Literal of names, case included (\"DFlash\" and \"dflash2\" are refused); "
    "llama.cpp looks each --spec-type name up exactly (the name is `draft-dflash`, not `dflash`); SGLang "
    "upper-cases the algorithm and refuses a name it has no member for. Each stops the server at start-up, after "
    "the image was pulled and the weights downloaded. The rest of the launch is judged as the DFlash launch it "
    "means to be.",
    example="vllm serve T --speculative-config '{\"method\": \"DFlash\", \"model\": D}'; "
    "llama-server -m t.gguf -md d.gguf --spec-type dflash",
    fix="Spell the method as the release does: \"dflash\" (vLLM), DFLASH (SGLang), draft-dflash (llama.cpp).",
    sources=(
        EngineSource("vllm", "vllm/config/speculative.py", "90-97", "SpeculativeMethod: the names `method` takes",
                     version="0.34.0"),
        EngineSource("vllm", "vllm/config/speculative.py", "1623-1634",
                     "_validate_method: another name only if a plugin registered it", version="0.34.0"),
        EngineSource("sglang", "sglang/srt/speculative/spec_info.py", "50-64",
                     "from_string: upper-cased, a member, NEXTN or a plugin's name; else ValueError",
                     version="0.5.23"),
        EngineSource("llama.cpp", "common/speculative.cpp", "72-84", "the --spec-type names, looked up exactly"),
        EngineSource("llama.cpp", "common/speculative.cpp", "2325-2341", "an unknown name throws"),
        EngineSource("llama.cpp", "common/arg.cpp", "4273-4281", "--spec-type: a comma-separated list"),
    ),
)
