"""Pydantic models of the DFlash draft/target contract."""

from .common import RopeInfo
from .draft import DraftSpec, build_target_layer_ids
from .draft_formats import parse_draft_config
from .target import TargetSpec, parse_target_config

__all__ = [
    "DraftSpec",
    "RopeInfo",
    "TargetSpec",
    "build_target_layer_ids",
    "parse_draft_config",
    "parse_target_config",
]
