"""`python -m dflash_compat` runs the CLI."""

from .cli import main

main()
