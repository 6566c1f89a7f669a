"""Probing a running server (`dflash-check probe`): its metrics, acceptance profiles, a local
reference to compare with, and `recommend`.

Every module here imports only the standard library at import time; the reference runtime is
reached through `reference.py`."""
