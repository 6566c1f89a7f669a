"""`python -m dflash_compat` runs the CLI."""

from dflash_compat.cli.app import main

main()
