"""DF913: a launch pinned to an engine release older than the engine's first with DFlash."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, Violation


def check(ctx):
    launch = ctx.launch
    version = ctx.engine_versions.get(launch.engine)
    if version is None or version.origin == "default" or not launch.speculative:
        return
    release = ctx.engine(launch.engine)
    info = release.info
    if not info.predates_dflash(version.requested):
        return
    where = f" ({version.detail})" if version.detail else ""
    latest = (release.flag_window or release.window or (info.first_dflash,))[-1]
    if version.origin == "launch-file" and version.detail.startswith("image") and launch.image:
        repo = launch.image.rsplit(":", 1)[0]
        tag = f"v{latest}" if launch.engine in ("vllm", "sglang") else latest
        fix = f"Use an image of {info.label} {info.first_dflash} or later, e.g. {repo}:{tag}."
    else:
        fix = f"Pin {info.label} {info.first_dflash} or later, e.g. {info.distribution or launch.engine}=={latest}."
    yield Violation(f"{launch.engine} {version.requested}{where} predates DFlash: {info.label}'s first release with "
                    f"DFlash is {info.first_dflash}, so this launch cannot run its draft, whatever the models",
                    [ctx.at_version()], fix=fix)


RULE = Rule(
    code="DF913",
    name="launch-engine-predates-dflash",
    severity="error",
    backends=(COMMON,),
    check=check,
    needs=("launch",),
    what="A launch with a draft runs an engine release that has DFlash: its image tag, pip pin or "
    "--engine-version is not older than the engine's first release with DFlash (vLLM 0.20.0, SGLang 0.5.11; "
    "docs/engine-facts.md cites the code of each).",
    why="The version alone decides it: a release without DFlash refuses the method or loads the draft as "
    "something else, whatever the target and draft are. The launch is judged from its pin even where the models "
    "cannot be read (offline, a private repo, a path inside the container).",
    example="image vllm/vllm-openai:v0.19.1 with --speculative-config '{\"method\": \"dflash\", ...}'",
    fix="Pin a release with DFlash (the finding names the newest the checker knows).",
)
