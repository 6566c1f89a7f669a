"""dflash-compat: check, adapt and smoke-test DFlash draft/target pairings."""

__version__ = "0.1.0"

__all__ = ["__version__"]
