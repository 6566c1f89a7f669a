"""Pydantic models of the DFlash draft/target contract."""

from dflash_compat.specs.common import RopeInfo
from dflash_compat.specs.draft import DraftSpec, build_target_layer_ids
from dflash_compat.specs.draft_formats import parse_draft_config
from dflash_compat.specs.target import TargetSpec, parse_target_config

__all__ = [
    "DraftSpec",
    "RopeInfo",
    "TargetSpec",
    "build_target_layer_ids",
    "parse_draft_config",
    "parse_target_config",
]
