"""The serve plan: the checked launch command for a pair on each engine (`dflash-check serve`).

Every module here imports only the standard library at import time; the check pipeline is reached
through `pipeline.py`."""
