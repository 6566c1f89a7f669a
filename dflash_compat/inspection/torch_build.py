"""Building a transformers target on the meta device from its config: no weights, no download beyond JSON.

torch and transformers are imported only inside these functions.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

from dflash_compat.adapters.locate import call_hook, text_config
from dflash_compat.exceptions import error_line
from dflash_compat.modelfacts import Skipped
from dflash_compat.resolve.refs import Resolved
from dflash_compat.specs import TargetSpec

__all__ = ["BuiltModel", "build", "call_hook", "is_native", "quiet", "text_config"]


@dataclass(frozen=True)
class BuiltModel:
    """A model built on the meta device, with the class transformers chose for it."""

    model: Any
    model_class: str
    auto_class: str  # the Auto class, or the architecture name, it was built through


def _skip(reason: str, detail: str) -> Skipped:
    return Skipped(reason, detail, framework="torch")


@contextmanager
def quiet() -> Iterator[None]:
    """transformers logs and warns while building models; the checker's output must stay clean."""
    import warnings

    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)


def is_native(target: TargetSpec) -> bool:
    """transformers has its own implementation of this model_type (so no repo code is needed to build it)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = target.raw.get("model_type")
    return isinstance(model_type, str) and model_type in CONFIG_MAPPING


def _make_config(resolved: Resolved, target: TargetSpec, remote: bool) -> Union[Any, Skipped]:
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if remote:  # trusted: transformers imports the repo's configuration code
        ref = resolved.repo_id if resolved.is_hub else str(resolved.folder)
        try:
            return AutoConfig.from_pretrained(ref, revision=resolved.revision, trust_remote_code=True)
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code is a skip, not our crash
            return _skip("build-failed", f"the repo's configuration code failed: {error_line(exc)}")
    model_type = target.raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        import transformers

        return _skip("unknown-model-type", f"transformers {transformers.__version__} does not know model_type "
                     f"{model_type!r}")
    try:
        return CONFIG_MAPPING[model_type].from_dict(dict(target.raw))
    except Exception as exc:  # noqa: BLE001 - transformers validates configs strictly in 5.x
        return _skip("build-failed", f"transformers rejects the config: {error_line(exc)}")


def _model_class(config: Any, target: TargetSpec, remote: bool) -> tuple[Optional[type], Optional[str]]:
    """The class the transformers reference loads: AutoModelForCausalLM, else AutoModelForImageTextToText
    (VLM wrappers), else the class named in `architectures`."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    if remote:
        for auto in (AutoModelForCausalLM, AutoModelForImageTextToText):
            if auto.__name__ in (getattr(config, "auto_map", None) or {}):
                return auto, auto.__name__
    for auto in (AutoModelForCausalLM, AutoModelForImageTextToText):
        if type(config) in auto._model_mapping:
            return auto, auto.__name__
    for arch in target.architectures:
        cls = getattr(transformers, arch, None) if isinstance(arch, str) else None
        if isinstance(cls, type) and getattr(cls, "config_class", None) is type(config):
            return cls, arch
    return None, None


def _meta_safe():
    """transformers' guard for models that call .item() on torch.linspace at init (remote code does), when present."""
    try:
        from transformers.initialization import meta_device_safe_creation_ops
    except ImportError:  # transformers 4.x
        return nullcontext()
    return meta_device_safe_creation_ops()


def build(resolved: Resolved, target: TargetSpec, remote: bool) -> Union[BuiltModel, Skipped]:
    """The target's causal-LM class built from its config on the meta device, or why it cannot be."""
    import torch

    config = _make_config(resolved, target, remote)
    if isinstance(config, Skipped):
        return config
    cls, via = _model_class(config, target, remote)
    if cls is None:
        return _skip("no-causal-lm-class",
                     f"transformers has no causal-LM class for model_type {target.raw.get('model_type')!r}")
    kwargs = {"trust_remote_code": True} if remote else {}
    try:
        with torch.device("meta"), _meta_safe():
            model = cls.from_config(config, **kwargs) if hasattr(cls, "from_config") else cls(config)
    except Exception as exc:  # noqa: BLE001 - a model transformers cannot build is a finding, not a crash
        return _skip("build-failed", f"{via}.from_config failed on the meta device: {error_line(exc)}")
    return BuiltModel(model, type(model).__name__, via)
