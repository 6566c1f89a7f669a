"""DF902: vLLM's --speculative-config is not JSON, or names a key the release's SpeculativeConfig lacks."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation


def check(ctx):
    launch = ctx.launch
    if launch.engine != "vllm":
        return
    if launch.spec_error:
        yield Violation(f"--speculative-config is {launch.spec_error}: vLLM parses it with json.loads and stops",
                        [ctx.at("spec") if "spec" in launch.where else ctx.at()],
                        fix="Write --speculative-config as one JSON object in single quotes: "
                        "'{\"method\": \"dflash\", \"model\": DRAFT, \"num_speculative_tokens\": K}'.")
        return
    release, flags = ctx.engine("vllm"), ctx.flags("vllm")
    if flags is None or launch.spec_config is None:
        return
    keys = flags.get("speculative_config_keys", {})
    version = ctx.engine_versions["vllm"].requested
    for key in launch.spec_config:
        if key in keys:
            continue
        elsewhere = [v for v in release.flag_window if v != version
                     and key in (ctx.engine("vllm", v).flags or {}).get("speculative_config_keys", {})]
        known = f" (a key of vllm {', '.join(elsewhere)})" if elsewhere else ""
        # difflib here, not at the top: only a check of a launch command needs it (start-up)
        import difflib

        near = difflib.get_close_matches(str(key), list(keys), n=1, cutoff=0.75)
        hint = f"; did you mean {near[0]!r}?" if near and not elsewhere else ""
        fix = (f"Write {near[0]!r} instead of {key!r} in --speculative-config." if hint else
               f"Remove {key!r} from --speculative-config (or pin the vLLM release that has it).")
        yield Violation(f"--speculative-config key {key!r} is not a field of vLLM {version}'s SpeculativeConfig"
                        f"{known}: the config forbids extra keys and vLLM stops at start-up{hint}",
                        [ctx.at(word=launch.where.get("draft") or launch.where.get("method") or launch.words[0])],
                        fix=fix)


RULE = Rule(
    code="DF902",
    name="vllm-speculative-config-invalid",
    severity="error",
    backends=("vllm",),
    check=check,
    needs=("launch",),
    what="vLLM's --speculative-config (or --speculative_config) is one JSON object whose keys are all fields of "
    "SpeculativeConfig at the pinned vLLM release.",
    why="The JSON sits inside a shell string, where a quote is easily lost; and SpeculativeConfig forbids keys it "
    "does not declare, which change between releases (0.34 dropped `disable_padded_drafter_batch`). Either "
    "mistake stops the server at start-up.",
    example="vllm serve T --speculative-config '{\"method\": \"dflash\", \"model\": D, "
    "\"num_speculative_tokens\": 15, \"disable_padded_drafter_batch\": true}' on vLLM 0.34.0",
    fix="Drop the key the release does not know, or pin the release that knows it.",
    sources=(
        EngineSource("vllm", "vllm/engine/arg_utils.py", "1864-1866", "--speculative-config is parsed by json.loads"),
        EngineSource("vllm", "vllm/config/speculative.py", "406-410", "SpeculativeConfig: the keys it takes"),
        EngineSource("vllm", "vllm/config/utils.py", "71", "config classes forbid extra keys"),
    ),
)
