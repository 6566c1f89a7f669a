"""Serving: checked launch commands (`serve`), a live-server probe (`probe`), acceptance profiles (`recommend`).

Every module here imports only the standard library at import time; the check pipeline is reached
through `pipeline.py` and the reference runtime through `reference.py` (one place each).
"""
