"""Converting a draft between the z-lab and speculators formats (`dflash-check convert`)."""
