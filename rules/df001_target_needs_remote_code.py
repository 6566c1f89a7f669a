"""DF001: the target's config loads its classes from the repository's own Python code."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation


def check(ctx: CheckContext):
    auto_map = ctx.target.auto_map
    if not auto_map:
        return
    classes = ", ".join(f"{k}={v}" for k, v in sorted(auto_map.items()) if isinstance(v, str)) or "?"
    given = "" if ctx.options.trust_remote_code else "; --trust-remote-code was not given, so the module checks skip it"
    yield Violation(
        f"target config has auto_map ({classes}): loading it runs the repository's own code{given}",
        [ctx.tloc("auto_map", "auto_map")],
    )


RULE = Rule(
    code="DF001",
    name="target-needs-remote-code",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The target's `config.json` has an `auto_map`, i.e. its model classes live in the repository's own Python files.",
    why="Every engine then needs `--trust-remote-code` (transformers `trust_remote_code=True`), and the code, not "
    "the config, decides whether hidden states can be captured; dflash-check's module checks import it only when allowed.",
    example='target {"auto_map": {"AutoModelForCausalLM": "modeling_foo.FooForCausalLM"}}',
    fix="Review the repository's code, then pass --trust-remote-code here and to the engine; or use a "
    "checkpoint of the same model that a built-in transformers class loads.",
)
