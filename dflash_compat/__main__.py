"""`python -m dflash_compat` runs the CLI."""

from dflash_compat.cli import main

main()
