"""`dflash-check facts refresh`: read engine releases into facts (docs/engine-facts.md). A thin door to
`python -m dflash_compat.enginefacts`, which holds the options and their help."""

from __future__ import annotations

import sys

import click


@click.group("facts", short_help="Engine facts per release: `facts refresh --engine vllm==0.34.1`.")
def facts_cmd() -> None:
    """Engine facts per release, read from the engines' wheels.

    \b
      dflash-check facts refresh --engine vllm==0.34.1   read one release into your cache
      dflash-check facts refresh --engine sglang         the newest release on the package index
    """


@facts_cmd.command("refresh", context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                                 "help_option_names": []})
@click.pass_context
def refresh_cmd(ctx: click.Context) -> None:
    """Read engine releases into facts (`--help` lists the options)."""
    from ..enginefacts.__main__ import main

    sys.exit(main(["refresh", *ctx.args]))
