"""The serving engines: which exist and their releases (`registry`), and what each release's code
does (`store`), read from the engines' own code by `dflash_compat.enginefacts` and bundled in data/."""

from pathlib import Path

__all__ = ["DATA_DIR"]

# The bundled engine knowledge: engines/ (facts per release), llamacpp/ (facts per build), launch_flags.json,
# draft_families.json. One place names it; the extractor (dflash_compat.enginefacts) writes there.
DATA_DIR = Path(__file__).parent / "data"
