"""Subcommands kept in their own modules, loaded only when used: name -> (module, attribute, short help)."""

COMMANDS: dict[str, tuple[str, str, str]] = {
    "smoke": (
        "dflash_compat.commands.smoke",
        "smoke_cmd",
        "Run DFlash speculative decoding end to end: lossless check, acceptance, speed-up.",
    ),
    "convert": (
        "dflash_compat.commands.convert",
        "convert_cmd",
        "Convert a DFlash draft between the z-lab and speculators formats, tensor by tensor.",
    ),
    "adapt": (
        "dflash_compat.commands.adapt",
        "adapt_cmd",
        "Write a Python adapter shim that makes a non-conforming target fit the contract.",
    ),
}
