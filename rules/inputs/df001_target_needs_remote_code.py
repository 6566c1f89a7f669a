"""DF001: the target's config loads its classes from the repository's own Python code."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import MAX_CHARS, MAX_ITEMS, quote, quote_items
from dflash_compat.rules._sources import MLX_LOAD_TARGET, REF_LOAD

HF_REMOTE_CODE = EngineSource("transformers", "transformers/dynamic_module_utils.py", "790-794",
                              "remote code without trust_remote_code=True: ValueError")
MLXLM_MODEL_FILE = EngineSource("mlx-lm", "mlx_lm/utils.py", "458-465", "a config model_file needs "
                                "trust_remote_code=True, else ValueError")


def check(ctx: RuleContext):
    auto_map = ctx.target.auto_map
    model_file = (ctx.target.raw or {}).get("model_file")
    given = "" if ctx.options.trust_remote_code else "; --trust-remote-code was not given, so the module checks skip it"
    if auto_map:
        pairs = [(k, v) for k, v in sorted(auto_map.items()) if isinstance(v, str)]
        shown = [f"{k[:MAX_CHARS]}={v[:MAX_CHARS]}" for k, v in pairs[:MAX_ITEMS]]
        classes = quote_items(shown, raw=True, total=len(pairs)) or "?"
        yield Violation(
            f"target config has auto_map ({classes}): loading it runs the repository's own code{given}",
            [ctx.tloc("auto_map", "auto_map")],
        )
    if model_file is not None:
        # mlx-lm's own convention: the config names a Python file of the repo that defines Model / ModelArgs
        yield Violation(
            f"target config has model_file ({quote(model_file)}): mlx-lm loading it runs the repository's own code{given}",
            [ctx.tloc("model_file", "model_file")],
        )


RULE = Rule(
    code="DF001",
    name="target-needs-remote-code",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The target's `config.json` has an `auto_map` (transformers) or a `model_file` (mlx-lm), i.e. its model "
    "classes live in the repository's own Python files.",
    why="transformers refuses such a repository unless `trust_remote_code=True`, and mlx-lm refuses a `model_file` "
    "without it; the dflash 0.1.0 loaders pass neither, so the dflash package cannot load this target at all, and "
    "vLLM / SGLang need `--trust-remote-code`. The code, not the config, then decides whether hidden states can "
    "be captured; dflash-check's module checks import it only when allowed.",
    example='target {"auto_map": {"AutoModelForCausalLM": "modeling_foo.FooForCausalLM"}}',
    fix="Review the repository's code, then pass --trust-remote-code here and to the engine; or use a "
    "checkpoint of the same model that a built-in transformers class loads.",
    sources=(HF_REMOTE_CODE, REF_LOAD, MLX_LOAD_TARGET, MLXLM_MODEL_FILE),
)
