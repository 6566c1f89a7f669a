"""Engine facts extracted statically from the engines' wheels into data/engine_support.json.

`python -m dflash_compat.enginefacts refresh [--wheels DIR] [--check]`; see docs/engine-facts.md.
"""
