"""Pydantic models of the DFlash draft/target contract, and `get_dotted`: a config value by its dotted key
(`dflash_config.block_size`), MISSING where any step is absent."""

from dflash_compat.specs._reader import MISSING, get_dotted
from dflash_compat.specs.common import RopeInfo
from dflash_compat.specs.draft import DraftSpec, build_target_layer_ids
from dflash_compat.specs.draft_formats import parse_draft_config
from dflash_compat.specs.target import TargetSpec, parse_target_config

__all__ = [
    "MISSING",
    "DraftSpec",
    "RopeInfo",
    "TargetSpec",
    "build_target_layer_ids",
    "get_dotted",
    "parse_draft_config",
    "parse_target_config",
]
