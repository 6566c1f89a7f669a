"""`launch --fix`: the launch command corrected for the engine release it runs, where the launch rules
know the correction (a removed flag renamed, a quantised draft cache reset, a key the release lacks
dropped, the DSpark method, the split mode, a clamped or zero speculative count)."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from dflash_compat.checker.findings import Finding
from dflash_compat.launch.parse import SETTING_FLAGS, Launch

__all__ = ["corrected"]

# llama.cpp's removed flags -> the flag that replaced them (common/arg.cpp:4410-4445 at b11434)
_RENAMED = {"--draft": "--spec-draft-n-max", "--draft-n": "--spec-draft-n-max", "--draft-max": "--spec-draft-n-max",
            "--draft-min": "--spec-draft-n-min", "--draft-n-min": "--spec-draft-n-min"}


_DRAFT_CACHE_FLAGS = (SETTING_FLAGS["llama.cpp"]["draft_kv_cache_type_k"]
                      + SETTING_FLAGS["llama.cpp"]["draft_kv_cache_type_v"])


def corrected(launch: Launch, findings: Sequence[Finding], draft: Any = None) -> Optional[list[str]]:
    """The corrected argv, or None when no finding of this launch has a mechanical correction."""
    codes = {f.code for f in findings}
    argv = [w.text for w in launch.words]
    changed = False
    start = len(argv) - _arg_count(launch)
    flags_at = {id(o.flag): o for o in launch.opts}
    out: list[str] = argv[:start]
    words = launch.words[start:]
    skip = 0
    block = getattr(draft, "block_size", None)
    for i, w in enumerate(words):
        if skip:
            skip -= 1
            continue
        opt = flags_at.get(id(w))
        if opt is None:
            out.append(w.text)
            continue
        has_value = opt.value is not None and opt.value is not w and i + 1 < len(words) and words[i + 1] is opt.value
        value = opt.value.text if opt.value is not None else None
        name = opt.name
        if "DF901" in codes and name in _RENAMED and launch.engine == "llama.cpp":
            name, changed = _RENAMED[name], True
        elif "DF901" in codes and _flagged(findings, "DF901", w):
            changed = True
            near = _suggested(findings, w)
            if near is None:  # an unknown flag without a near match is dropped with its value
                skip = 1 if has_value else 0
                continue
            name = near
        if "DF904" in codes and name in _DRAFT_CACHE_FLAGS and str(value).lower() not in ("f16", "bf16", "f32"):
            value, changed = "f16", True
        if "DF905" in codes and name in ("-sm", "--split-mode") and str(value).lower() == "tensor":
            value, changed = "layer", True
        if "DF903" in codes and name == "--spec-draft-n-max" and isinstance(block, int) and block > 1:
            value, changed = str(block - 1), True
        if launch.engine == "vllm" and name in ("--speculative-config", "-sc") and launch.spec_config is not None:
            spec, spec_changed = _fix_spec(launch, codes, findings, block)
            if spec_changed:
                value, changed = json.dumps(spec), True
        if has_value:
            out += [name, value]
            skip = 1
        elif value is not None and "=" in w.text:
            out.append(f"{name}={value}")
        else:
            out.append(name)
    return out if changed else None


def _arg_count(launch: Launch) -> int:
    """How many of the launch's words are its arguments (after the entry point)."""
    first = min((launch.words.index(o.flag) for o in launch.opts), default=len(launch.words))
    pos = [launch.words.index(p) for p in launch.positionals if p in launch.words]
    return len(launch.words) - min([first, *pos])


def _flagged(findings: Sequence[Finding], code: str, word) -> bool:
    return any(f.code == code and any(getattr(loc, "line", None) == word.line and
                                      getattr(loc, "column", None) == word.column for loc in f.locations)
               for f in findings)


def _suggested(findings: Sequence[Finding], word) -> Optional[str]:
    for f in findings:
        if f.code == "DF901" and "did you mean " in f.message and any(
                getattr(loc, "line", None) == word.line and getattr(loc, "column", None) == word.column
                for loc in f.locations):
            return f.message.rsplit("did you mean ", 1)[1].rstrip("?")
    return None


def _fix_spec(launch: Launch, codes: set[str], findings: Sequence[Finding], block: Any) -> tuple[dict, bool]:
    spec = dict(launch.spec_config or {})
    changed = False
    if "DF902" in codes:
        for f in findings:
            if f.code == "DF902" and "key '" in f.message:
                key = f.message.split("key '", 1)[1].split("'", 1)[0]
                value = spec.pop(key, None)
                if "did you mean '" in f.message:  # a misspelt key: the nearest key of that release, never dropped
                    near = f.message.rsplit("did you mean '", 1)[1].split("'", 1)[0]
                    spec.setdefault(near, value)
                changed = True
    if "DF906" in codes and spec.get("method") == "dflash":
        spec["method"], changed = "dspark", True
    k = spec.get("num_speculative_tokens")
    if isinstance(k, int) and (k <= 0 or ("DF303" in codes and k > block - 1 if isinstance(block, int) else False)) \
            and isinstance(block, int) and block > 1:
        spec["num_speculative_tokens"], changed = block - 1, True
    return spec, changed
