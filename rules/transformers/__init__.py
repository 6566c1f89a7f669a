"""DF2xx: transformers' native DFlash and the dflash reference runtime (configs, DF20x-DF21x; the target's module tree, DF25x)."""
