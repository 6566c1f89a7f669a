"""DF416: a Domino draft config SGLang's DFLASH config parser refuses."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote

_MISSING = object()


def _int(value):
    """SGLang's _parse_optional_int: None stays None, else int(value) or an error."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return _MISSING


def check(ctx: RuleContext):
    d = ctx.draft
    raw = d.raw
    dc = raw.get("dflash_config") if isinstance(raw.get("dflash_config"), dict) else {}
    if dc.get("projector_type", raw.get("projector_type")) != "domino":
        return
    problems, keys = [], []

    def bad(text: str, key: str) -> None:
        problems.append(text)
        keys.append(key)

    shift = dc.get("shift_label", raw.get("shift_label"))
    if not isinstance(shift, bool):
        bad(f"shift_label is {quote(shift)}, not a bool", "shift_label")
    prefix = _int(dc.get("pure_draft_prefix_len", raw.get("pure_draft_prefix_len")))
    if prefix is _MISSING or prefix is None or prefix != 1:
        bad(f"pure_draft_prefix_len is {quote(dc.get('pure_draft_prefix_len', raw.get('pure_draft_prefix_len')))}, "
            "not 1", "pure_draft_prefix_len")
    gru = _int(dc.get("gru_hidden_dim", raw.get("gru_hidden_dim")))
    if gru is None or gru is _MISSING or gru < 1:
        bad("gru_hidden_dim is missing or not a positive integer", "gru_hidden_dim")
    nested, top = _int(dc.get("emb_dim")), _int(raw.get("emb_dim"))
    if _MISSING in (nested, top) or any(v is not None and v < 1 for v in (nested, top)):
        bad("emb_dim is not a positive integer", "emb_dim")
    elif nested is not None and top is not None and nested != top:
        bad(f"emb_dim differs between dflash_config ({nested}) and the top level ({top})", "emb_dim")
    elif nested is None and top is None:
        bad("emb_dim is missing", "emb_dim")
    if d.block_size is not None and d.block_size <= 1:
        bad(f"block_size is {d.block_size}, not > 1", "block_size")
    if problems:
        yield Violation(f"Domino draft config: {'; '.join(problems)}: SGLang stops at start-up when it parses the "
                        "draft config", [ctx.dloc(k, f"dflash_config.{k}") for k in keys])


RULE = Rule(
    code="DF416",
    name="sglang-domino-config-invalid",
    severity="error",
    backends=("sglang",),
    check=check,
    what="A Domino draft (`projector_type: domino`) has a bool `shift_label`, `pure_draft_prefix_len` 1, a "
    "positive `gru_hidden_dim` and `emb_dim` (the same in `dflash_config` and at the top level when both are "
    "given) and a block size above 1. Each key is read from `dflash_config`, else the top level.",
    why="SGLang parses these when it reads the draft config and refuses the launch when one is missing or "
    "out of range; Domino's GRU prefix and embedding projector are built from them.",
    example='draft {"dflash_config": {"projector_type": "domino", "shift_label": true, "pure_draft_prefix_len": 2, '
    '"gru_hidden_dim": 256, "emb_dim": 256}}',
    fix="Restore the Domino keys from the draft's training config.",
    sources=(
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "501-516", "_parse_optional_int"),
        EngineSource("sglang", "sglang/srt/speculative/dflash_utils.py", "727-789", "Domino keys parsed and checked"),
    ),
)
