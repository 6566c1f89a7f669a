"""DF904: a quantised KV cache for the DFlash draft (llama.cpp -ctkd / -ctvd)."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation
from dflash_compat.quoting import quote

_FULL = {"f16", "bf16", "f32"}


def check(ctx):
    launch = ctx.launch
    if launch.engine != "llama.cpp":
        return
    for setting, flag in (("draft_kv_cache_type_k", "-ctkd"), ("draft_kv_cache_type_v", "-ctvd")):
        value = launch.settings.get(setting)
        if setting in launch.unresolved or not isinstance(value, str) or value.lower() in _FULL:
            continue
        yield Violation(f"{flag} {quote(value)}: a quantised KV cache for the "
                        "DFlash draft; users report acceptance falling from 99% to 0-2% with q8_0, without an "
                        "error (llama.cpp #25725)", [ctx.at(setting)],
                        fix=f"Drop {flag} (the draft cache defaults to f16) or set it to f16.")


RULE = Rule(
    code="DF904",
    name="llamacpp-draft-kv-cache-quantized",
    severity="warning",
    backends=("llama.cpp",),
    check=check,
    needs=("launch",),
    what="The draft's KV cache type (-ctkd / --spec-draft-type-k, -ctvd / --spec-draft-type-v) is f16, bf16 or "
    "f32.",
    why="The DFlash draft attends over the target's hidden states in its own KV cache; with a q8_0 draft "
    "cache users measured acceptance collapsing from 99% to 0-2% (llama.cpp issue #25725). llama.cpp accepts "
    "every cache type here and warns about none, so the deployment can silently run slower than without a draft. "
    "Measured here with llama-server b11434 on the bundled demo pair, -ctkd/-ctvd q8_0 kept acceptance (tau 5.52 "
    "against 5.58, docs/llamacpp.md): the collapse depends on the model and draft, hence a warning, not an error.",
    example="llama-server -m target.gguf -md draft.gguf --spec-type draft-dflash -ctkd q8_0 -ctvd q8_0",
    fix="Leave the draft cache at its default (f16); quantise the target's cache (-ctk/-ctv) instead if memory "
    "is short.",
    sources=(
        EngineSource("llama.cpp", "common/arg.cpp", "4099-4124", "-ctkd / -ctvd accept any cache type"),
        EngineSource("llama.cpp", "common/common.h", "346-347", "the draft cache defaults to f16"),
    ),
)
