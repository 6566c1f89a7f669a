"""Subcommands kept in their own modules, loaded only when used: name -> (module, attribute, short help)."""

COMMANDS: dict[str, tuple[str, str, str]] = {
    "facts": (
        "dflash_compat.cli.commands.facts",
        "facts_cmd",
        "Engine facts per release: `facts refresh --engine vllm==0.34.1` reads one into your cache.",
    ),
    "smoke": (
        "dflash_compat.cli.commands.smoke",
        "smoke_cmd",
        "Run DFlash speculative decoding end to end: lossless check, acceptance, speed-up.",
    ),
    "convert": (
        "dflash_compat.cli.commands.convert",
        "convert_cmd",
        "Convert a DFlash draft between the z-lab and speculators formats, tensor by tensor.",
    ),
    "init-draft": (
        "dflash_compat.cli.commands.init_draft",
        "init_draft_cmd",
        "Write a DFlash draft config (and optional weights) derived from a target's config.",
    ),
    "train": (
        "dflash_compat.cli.commands.train",
        "train_cmd",
        "Train a DFlash draft for a target (self-distillation, the published recipe).",
    ),
    "adapt": (
        "dflash_compat.cli.commands.adapt",
        "adapt_cmd",
        "Write a Python adapter shim that makes a non-conforming target fit the contract.",
    ),
    "serve": (
        "dflash_compat.cli.commands.serve",
        "serve_cmd",
        "Print the launch command for a pair on vLLM, SGLang, MLX or transformers, checked by the rules.",
    ),
    "probe": (
        "dflash_compat.cli.commands.probe",
        "probe_cmd",
        "Measure a running vLLM / SGLang server: speculation engaged, acceptance, losslessness.",
    ),
    "launch": (
        "dflash_compat.cli.commands.launch",
        "launch_cmd",
        "Check the engine launches in shell scripts, Dockerfiles, compose, Kubernetes and workflow files.",
    ),
    "recommend": (
        "dflash_compat.cli.commands.recommend",
        "recommend_cmd",
        "Estimate the speed-up for each K from an acceptance profile and recommend K.",
    ),
}
