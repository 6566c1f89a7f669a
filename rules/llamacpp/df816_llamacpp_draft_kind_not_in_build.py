"""DF816: a DFlash 2 or DSpark draft on a llama.cpp build whose DFlash loader predates that kind."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation, located
from dflash_compat.rules.llamacpp._builds import DRAFT_KINDS, first_with
from dflash_compat.rules.llamacpp._helpers import DFLASH_BUILDS, cite, draft_is_gguf, facts


def _since(ctx: RuleContext, feature: str, loader: str) -> str:
    first = first_with(ctx, feature)
    if first is None:
        return "no bundled build has it"
    return f"it came with {first} ({ctx.engine('llama.cpp', first).where(loader).cite()})"


def check(ctx: RuleContext):
    release = ctx.engine("llama.cpp")
    if not release.feature("dflash"):
        return  # a build without DFlash at all: DF012 says so
    d = ctx.draft
    for kind, (tensor, feature, loader) in DRAFT_KINDS.items():
        if release.feature(feature):
            continue
        if draft_is_gguf(ctx):
            if tensor not in d.gguf.tensors:
                continue
            yield Violation(
                f"the draft GGUF is a {kind} draft (it holds {tensor}), but llama.cpp {release.version}'s dflash "
                f"loader has no {kind} branch: it creates none of those tensors, so loading the draft fails "
                f"(\"wrong number of tensors\", {cite(ctx, 'tensor_count_check')}); {_since(ctx, feature, loader)}",
                [ctx.tensor_loc(tensor, d.gguf.file)],
            )
        elif kind == "DFlash 2" and d.has_v2_layers and not d.is_speculators and any(
                facts(ctx)["converter_architectures"].get(a) == "dflash" for a in d.architectures
                if isinstance(a, str)):
            yield Violation(
                f"a DFlash 2 draft (conv/selector layers): llama.cpp {release.version} has no DFlash 2 loader, so "
                f"neither its converter nor llama-server handles those layers; {_since(ctx, feature, loader)}",
                [ctx.dloc("architectures", "architectures")],
            )


RULE = Rule(
    code="DF816",
    name="llamacpp-draft-kind-not-in-build",
    severity="error",
    backends=("llama.cpp",),
    versions=DFLASH_BUILDS,
    check=check,
    what="A DFlash 2 draft (selector tensors) or a DSpark draft (a Markov head) is served by a llama.cpp build "
    "whose DFlash loader has that kind: DSpark from b10173, DFlash 2 from b10662 (read per build from "
    "src/models/dflash.cpp).",
    why="Every kind of DFlash draft is one GGUF architecture, dflash; a build's loader creates the tensors of the "
    "kinds it knows and llama.cpp then counts the file's tensors. An older build (b10622 for DFlash 2, the one "
    "beellama #134 and buun #112 met) creates fewer tensors than the file holds and refuses it at start-up: "
    "\"done_getting_tensors: wrong number of tensors\".",
    example="llama-server b10622 -md Qwen3.8-27B-DFlash2.gguf --spec-type draft-dflash",
    fix="Use a newer build (--engine-version llama.cpp==b10662 or later for DFlash 2, b10173 for DSpark), or a "
    "DFlash 1 draft.",
    sources=(located("llama.cpp", "dflash2_loader"), located("llama.cpp", "dspark_loader"),
             located("llama.cpp", "tensor_count_check")),
)
