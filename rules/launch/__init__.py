"""DF9xx: launch commands as written in deployment files (`dflash-check launch`)."""
