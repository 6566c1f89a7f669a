"""`dflash-check facts refresh`: read engine releases into facts in the user's cache (docs/engine-facts.md),
through `python -m dflash_compat.enginefacts refresh`, which also holds the maintainers' options."""

from __future__ import annotations

import sys
from typing import Optional

import click


@click.group("facts", short_help="Engine facts per release: `facts refresh --engine vllm==0.34.1`.")
def facts_cmd() -> None:
    """Engine facts per release, read from the engines' wheels.

    \b
      dflash-check facts refresh --engine vllm==0.34.1   # one release
      dflash-check facts refresh --engine sglang         # its newest
    """


@facts_cmd.command("refresh", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--engine", "engines", multiple=True, required=True, metavar="NAME[==VERSION]",
              help="An engine release to read (repeatable); without ==VERSION, the newest on the package index.")
@click.option("--wheels", type=click.Path(file_okay=False),
              help="A folder holding the engine wheels (or unpacked NAME-VERSION/ folders, or source distributions "
              "NAME-VERSION.tar.gz); default: pip downloads them.")
@click.option("--cache", type=click.Path(file_okay=False),
              help="The download folder (default: $XDG_CACHE_HOME/dflash-compat/wheels).")
def refresh_cmd(engines: tuple[str, ...], wheels: Optional[str], cache: Optional[str]) -> None:
    """Read engine releases into facts in your cache, where the next check finds them. Maintainers
    regenerate the bundled window with `python -m dflash_compat.enginefacts refresh` (docs/engine-facts.md)."""
    from dflash_compat.enginefacts.__main__ import main
    from dflash_compat.engines.registry import ENGINES, parse_spec
    from dflash_compat.exceptions import InputError

    for spec in engines:  # checked here, so a bad spec is the CLI's one error line (exit 2)
        if "==" in spec:
            name, version = parse_spec(spec, "--engine")
            info = ENGINES[name]
            if info.predates_dflash(version):
                raise InputError(f"--engine {spec!r}: {info.label} {version} predates DFlash (its first release "
                                 f"with DFlash is {info.first_dflash}; docs/engine-facts.md): there are no facts "
                                 "to read")
        elif spec.strip().lower() not in ENGINES or ENGINES[spec.strip().lower()].package is None:
            raise InputError(f"--engine {spec!r}: expected NAME[==VERSION] with NAME one of "
                             f"{', '.join(n for n, e in ENGINES.items() if e.package)}")
    argv = ["refresh", *(a for e in engines for a in ("--engine", e))]
    argv += ["--wheels", wheels] if wheels else []
    argv += ["--cache", cache] if cache else []
    sys.exit(main(argv))
