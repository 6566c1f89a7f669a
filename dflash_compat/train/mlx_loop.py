"""`train --framework mlx`: the same recipe on MLX (Apple Silicon; mlx[cpu] on Linux), the same export.

The same batches and anchors as the PyTorch trainer (sampler.py's numpy draw), the same objective
(objective.py's blocks, mask and weights, written here in MLX), the same AdamW (bias-corrected,
betas 0.9/0.95, weight decay on matrices only), warmup + cosine schedule and gradient clipping; the
target is mlx-lm's model through our MLX runtime (`runtime.mlx_target`), the draft our MLX draft module
(`runtime.mlx_draft`), evaluated with our MLX `spec_generate`. Checkpoints use the PyTorch trainer's
files and names (model / optimizer safetensors, state.json), so either trainer resumes the other's.
Everything runs in float32. Nothing here imports torch (transformers, which reads the tokenizer, does
where torch is installed), so `[mlx]` without `[torch]` is enough.

DFlash v1 drafts with the default RoPE (no scaled RoPE types: the masked forward computes its own
rotation for the blocks' positions).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from dflash_compat.exceptions import InputError, MissingDependencyError, RuntimeUnsupportedError, WeightsError, one_line
from dflash_compat.train.config import TrainConfig, default_gamma

__all__ = ["prepare_mlx", "run_training_mlx", "MLXSession", "forward_masked", "block_loss_mlx"]


@dataclass
class MLXSession:
    config: TrainConfig
    out: Path
    target: Any  # runtime.mlx_target.MLXTarget, float32
    draft: Any  # runtime.mlx_draft.DFlashDraftModel, float32
    draft_config: dict
    ids: Any  # numpy [N, T] int64
    loss_mask: Any  # numpy [N, T] bool
    prompts: list[list[int]]
    stop_ids: list[int]
    optimizer: Any = None
    start_step: int = 0
    history: list[dict] = field(default_factory=list)
    data_summary: dict = field(default_factory=dict)


def _imports():
    try:
        import mlx.core as mx
        import mlx.nn as nn
        import mlx.optimizers as optim
    except ImportError:
        raise MissingDependencyError("--framework mlx needs MLX: pip install 'dflash-compat[mlx]'") from None
    return mx, nn, optim


# ---------------------------------------------------------------------------------------------
# the objective, as objective.py's
# ---------------------------------------------------------------------------------------------


def _rope(x, positions, inv_freq):
    """Neox rotation of x [B, heads, S, D] at positions [S] (the torch draft's rope(), any positions)."""
    import mlx.core as mx

    angles = positions.astype(mx.float32)[:, None] * inv_freq[None, :]  # [S, D/2]
    emb = mx.concatenate([angles, angles], axis=-1)
    cos, sin = mx.cos(emb).astype(x.dtype), mx.sin(emb).astype(x.dtype)
    half = x.shape[-1] // 2
    rotated = mx.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def forward_masked(draft, noise, features, positions, masks: Callable):
    """The MLX draft's layers on any number of blocks at once (torch_draft.forward_masked's twin): noise [B, Q, H],
    features [B, C, L*H] of positions 0 .. C-1, positions [Q], masks(causal, window) -> [Q, C+Q] bool."""
    import mlx.core as mx

    cfg = draft.cfg
    c = features.shape[1]
    ctx = draft.hidden_norm(draft.fc(features))  # [B, C, H]
    inv_freq = 1.0 / (cfg.rope_theta ** (mx.arange(0, cfg.head_dim, 2, dtype=mx.float32) / cfg.head_dim))
    pos_q = positions
    pos_k = mx.concatenate([mx.arange(c), positions])
    built: dict = {}
    h = noise
    for layer in draft.layers:
        key = (layer.causal, layer.window)
        if key not in built:
            built[key] = masks(*key)
        attn = layer.self_attn
        x = layer.input_layernorm(h)
        b, q_len, _ = x.shape
        both = mx.concatenate([ctx, x], axis=1)
        q = attn.q_norm(attn.q_proj(x).reshape(b, q_len, attn.num_heads, attn.head_dim)).transpose(0, 2, 1, 3)
        k = attn.k_norm(attn.k_proj(both).reshape(b, c + q_len, attn.num_kv_heads, attn.head_dim)).transpose(0, 2, 1, 3)
        v = attn.v_proj(both).reshape(b, c + q_len, attn.num_kv_heads, attn.head_dim).transpose(0, 2, 1, 3)
        q, k = _rope(q, pos_q, inv_freq), _rope(k, pos_k, inv_freq)
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=attn.scale, mask=built[key])
        h = h + attn.o_proj(out.transpose(0, 2, 1, 3).reshape(b, q_len, -1))
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    return draft.norm(h)


def _mask_fn(t: int, anchors, bs: int):
    """objective.block_attention_mask in numpy, as an mx bool array."""
    import mlx.core as mx
    import numpy as np

    def build(causal: bool, window: Optional[int]):
        q_anchor = np.repeat(anchors, bs)
        q_pos = q_anchor + np.tile(np.arange(bs), anchors.size)
        sees_context = np.arange(t)[None, :] < q_anchor[:, None]
        block = np.arange(q_pos.size) // bs
        visible = np.concatenate([sees_context, block[:, None] == block[None, :]], axis=1)
        if causal or window is not None:
            k_pos = np.concatenate([np.arange(t), q_pos])
            if causal:
                visible &= k_pos[None, :] <= q_pos[:, None]
            if window is not None:
                visible &= q_pos[:, None] - k_pos[None, :] < window
                if not causal:
                    visible &= k_pos[None, :] - q_pos[:, None] < window
        return mx.array(visible)

    return build


def block_loss_mlx(draft, target, ids, loss_mask, anchors, gamma: float, labels: str, total: float):
    """-> (loss as the PyTorch trainer's block_loss computes it, its gradients for the draft, stats sums)."""
    import mlx.core as mx
    import mlx.nn as nn
    import numpy as np

    from dflash_compat.train.sampler import block_valid, position_weights

    bs = draft.block_size
    b, t = ids.shape
    a = anchors.size
    ids_mx = mx.array(ids)
    out = target.forward(ids_mx, target.new_cache(), 0, capture=draft.target_layer_ids)
    features = mx.stop_gradient(out.features.astype(mx.float32))
    if labels == "data":
        label_ids = ids_mx
    else:
        greedy = mx.argmax(out.logits, axis=-1)
        label_ids = mx.concatenate([ids_mx[:, :1], greedy[:, :-1]], axis=1)
    pos = anchors[:, None] + np.arange(bs)[None, :]
    pos_c = np.minimum(pos, t - 1)
    block = np.full((b, a, bs), draft.mask_token_id, dtype=np.int64)
    block[:, :, 0] = ids[:, anchors]
    noise = target.embed(mx.array(block.reshape(b, -1)))
    if draft.cfg.input_embedding_scale != 1.0:
        noise = noise * draft.cfg.input_embedding_scale
    noise = mx.stop_gradient(noise.astype(mx.float32))
    wanted = label_ids[:, mx.array(pos_c.reshape(-1))].reshape(b, a, bs)
    valid = block_valid(loss_mask, anchors, bs)
    weight = mx.array(position_weights(bs, gamma)[None, None, :] * valid)
    masks = _mask_fn(t, anchors, bs)
    positions = mx.array(pos.reshape(-1))

    def loss_of(model):
        hidden = forward_masked(model, noise, features, positions, masks)
        logits = model.compute_logits(hidden, target.head).astype(mx.float32).reshape(b, a, bs, -1)
        ce = nn.losses.cross_entropy(logits, wanted, reduction="none")
        numerator = (ce * weight).sum()
        return numerator / total, (numerator, logits)

    (loss, (numerator, logits)), grads = nn.value_and_grad(draft, loss_of)(draft)
    right = np.array(mx.argmax(logits, axis=-1) == wanted) & valid
    full = valid[:, :, 1:].all(axis=-1)
    run = np.cumprod(right[:, :, 1:].astype(np.int64), axis=-1).sum(axis=-1) + 1
    sums = np.concatenate([[float(numerator)], right.sum(axis=(0, 1))[1:], valid.sum(axis=(0, 1))[1:],
                           [float(run[full].sum()), float(full.sum())]]).astype(np.float64)
    return loss, grads, sums


# ---------------------------------------------------------------------------------------------
# optimizer, checkpoints, export
# ---------------------------------------------------------------------------------------------


def make_optimizer(config: TrainConfig):
    """AdamW as loop.make_optimizer's: weight decay on matrices only, bias correction (torch's AdamW)."""
    _, _, optim = _imports()
    decay = optim.AdamW(learning_rate=config.lr, betas=[0.9, 0.95], eps=1e-8, weight_decay=config.weight_decay,
                        bias_correction=True)
    plain = optim.AdamW(learning_rate=config.lr, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.0, bias_correction=True)
    return optim.MultiOptimizer([decay, plain], [lambda path, p: p.ndim >= 2])


def _set_lr(optimizer, lr: float) -> None:
    for sub in optimizer.optimizers:
        sub.learning_rate = lr


def _flat(tree) -> dict:
    from mlx.utils import tree_flatten

    return dict(tree_flatten(tree))


def _tensor_bytes(arrays: dict, dtype=None) -> bytes:
    """safetensors bytes of MLX arrays (through a scratch file: mx.save_safetensors writes files only)."""
    import tempfile

    import mlx.core as mx

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "t.safetensors"
        mx.save_safetensors(str(path), {k: v.astype(dtype) if dtype is not None else v for k, v in arrays.items()},
                            metadata={"format": "pt"})
        return path.read_bytes()


def save_checkpoint_mlx(s: MLXSession, step: int) -> None:
    from dflash_compat.files.safe_write import make_output_folder, write_output
    from dflash_compat.train.checkpoint import CHECKPOINT_DIR, write_json

    folder = make_output_folder(s.out / CHECKPOINT_DIR)
    params = _flat(s.draft.parameters())
    moments, adam_steps = {}, {}
    for sub in s.optimizer.optimizers:
        state = _flat(sub.state)
        for name in params:
            if f"{name}.m" in state:
                moments[f"{name}::exp_avg"] = state[f"{name}.m"]
                moments[f"{name}::exp_avg_sq"] = state[f"{name}.v"]
                adam_steps[name] = float(int(sub.state["step"]))
    write_output(folder / "model.safetensors", _tensor_bytes(params), force=True)
    write_output(folder / "optimizer.safetensors", _tensor_bytes(moments), force=True)
    write_json(folder / "state.json", {"step": step, "adam_steps": adam_steps, "draft_config": s.draft_config,
                                       "history": s.history, "global_batch": s.config.batch_size})


def load_checkpoint_mlx(s: MLXSession) -> None:
    import mlx.core as mx
    from mlx.utils import tree_unflatten

    from dflash_compat.train.checkpoint import _read_state, checkpoint_files

    state_path, model_path, moments_path = checkpoint_files(s.out)
    step, adam_steps, saved, history = _read_state(state_path)
    try:
        weights = mx.load(str(model_path), format="safetensors")
        moments = mx.load(str(moments_path), format="safetensors")
    except (RuntimeError, OSError, ValueError) as exc:
        raise WeightsError(f"--resume: the checkpoint in {state_path.parent} is unreadable ({one_line(exc)})") from None
    params = _flat(s.draft.parameters())
    if {k: tuple(v.shape) for k, v in weights.items()} != {k: tuple(v.shape) for k, v in params.items()}:
        raise InputError(f"--resume: the checkpoint in {state_path.parent} belongs to a different draft")
    if saved and saved != s.draft_config:
        raise InputError(f"--resume: the checkpoint in {s.out} was made for another draft config")
    s.draft.load_weights(list(weights.items()), strict=True)
    counts = set(adam_steps.values())
    if len(counts) > 1 or set(adam_steps) != set(params) or not all(
            f"{n}::exp_avg" in moments and f"{n}::exp_avg_sq" in moments for n in params):
        raise WeightsError(f"--resume: the optimizer state in {state_path.parent} does not match the draft")
    count = int(counts.pop()) if counts else 0
    for sub, keep in zip(s.optimizer.optimizers, (lambda p: p.ndim >= 2, lambda p: p.ndim < 2)):
        # MLX's AdamW state: step, learning_rate, and per parameter m / v, in the parameters' tree
        flat = [("step", mx.array(count, dtype=sub.state["step"].dtype)), ("learning_rate", sub.state["learning_rate"])]
        for name, p in params.items():
            if keep(p):
                flat += [(f"{name}.m", moments[f"{name}::exp_avg"]), (f"{name}.v", moments[f"{name}::exp_avg_sq"])]
        sub.state = tree_unflatten(flat)
    s.start_step, s.history = step, list(history)


def export_mlx(s: MLXSession) -> None:
    """config.json + model.safetensors, z-lab format, as checkpoint.export_draft writes them."""
    import mlx.core as mx

    from dflash_compat.files.safe_write import write_output
    from dflash_compat.train.checkpoint import write_json

    dtype = {"bfloat16": mx.bfloat16, "float16": mx.float16, "float32": mx.float32}[s.config.export_dtype]
    write_output(s.out / "model.safetensors", _tensor_bytes(_flat(s.draft.parameters()), dtype), force=True)
    config = dict(s.draft_config, torch_dtype=s.config.export_dtype)
    config.pop("dtype", None)
    write_json(s.out / "config.json", config)


# ---------------------------------------------------------------------------------------------
# preparing and running
# ---------------------------------------------------------------------------------------------


def _random_weights(draft, seed: int, std: float = 0.02) -> None:
    """A config-only draft's start: linear weights ~ N(0, std) from numpy's seeded generator, norms 1."""
    import mlx.core as mx
    import numpy as np

    rng = np.random.default_rng(seed % (1 << 64))
    weights = [(name, mx.ones(p.shape) if name.endswith("norm.weight")
                else mx.array(rng.standard_normal(p.shape).astype(np.float32) * std))
               for name, p in sorted(_flat(draft.parameters()).items())]
    draft.load_weights(weights, strict=True)


def _load_draft(ref: str, seed: int, token: Optional[str]):
    import mlx.core as mx

    from dflash_compat.files.weightfiles import weight_paths
    from dflash_compat.resolve.refs import download_weights, resolve
    from dflash_compat.runtime.draft_config import draft_config
    from dflash_compat.runtime.mlx_draft import build_draft, load_draft_weights
    from dflash_compat.specs import parse_draft_config

    resolved = resolve(ref, "draft", token=token)
    raw = resolved.json("config.json")
    cfg = draft_config(parse_draft_config(raw, ref))
    if cfg.version != 1:
        raise RuntimeUnsupportedError(f"draft {ref}: train supports DFlash v1 drafts (DFlashDraftModel) only")
    if cfg.rope_type != "default":
        raise RuntimeUnsupportedError(f"draft {ref}: --framework mlx trains drafts with the default RoPE; its "
                                      f"{cfg.rope_type} scaling needs --framework torch")
    module = build_draft(cfg, raw)
    folder = download_weights(resolved, token=token)
    files = weight_paths(folder, f"draft {ref}")
    if files:
        state = load_draft_weights(folder, files)
        expected = {k: tuple(v.shape) for k, v in _flat(module.parameters()).items()}
        if {k: tuple(v.shape) for k, v in state.items()} != expected:
            raise WeightsError(f"draft {ref}: its weights do not match its config.json (names or shapes differ)")
        module.load_weights([(k, v.astype(mx.float32)) for k, v in state.items()], strict=True)
    else:
        _random_weights(module, seed)
    mx.eval(module.parameters())
    return module, raw


def prepare_mlx(target: str, draft: str, data, out: str, config: TrainConfig, *, resume: bool = False,
                force: bool = False, token: Optional[str] = None, log: Optional[Callable[[str], None]] = None):
    """prepare()'s checks and loading for the MLX trainer; -> MLXSession."""
    from dflash_compat.files.safe_write import make_output_folder
    from dflash_compat.resolve.refs import download_weights, resolve
    from dflash_compat.train import _tokenizer, check_out
    from dflash_compat.train import data as data_mod

    config.validate()
    t_res = resolve(target, "target", token=token)
    out_path = check_out(out, target, draft, resume, force)
    docs = data_mod.load_training_data(data, config)
    mx, _, _ = _imports()
    from dflash_compat.runtime.core import check_pairing
    from dflash_compat.runtime.mlx_generate import stop_tokens_of
    from dflash_compat.runtime.mlx_target import load_target

    t_folder = Path(download_weights(t_res, token=token))
    tokenizer = _tokenizer(t_folder, target)
    eos = tokenizer.eos_token_id if isinstance(tokenizer.eos_token_id, int) else None
    tokens = data_mod.tokenize_training_data(docs, tokenizer, config, eos)
    module, raw = _load_draft(draft, config.seed, token)
    ids, mask = data_mod.pack(tokens.train, config.seq_len, eos, module.block_size + 2, tokens.train_masks)
    prompts = tokens.eval_prompts(config.eval_prompt_tokens, config.eval_prompts)
    adapter = load_target(t_folder, dtype=mx.float32)
    adapter.model.freeze()
    check_pairing(module, adapter)
    s = MLXSession(config, out_path, adapter, module, raw, ids, mask, prompts, stop_tokens_of(adapter))
    s.optimizer = make_optimizer(config)
    s.optimizer.init(module.trainable_parameters())
    s.data_summary = dict(tokens.summary, documents=len(docs), train_sequences=int(ids.shape[0]),
                          eval_prompts=len(prompts))
    if resume:
        load_checkpoint_mlx(s)
        if s.start_step >= config.steps:
            raise InputError(f"--resume: the checkpoint is at step {s.start_step}; pass --steps above it")
    make_output_folder(out_path)
    return s


def held_out_tau_mlx(s: MLXSession) -> Optional[float]:
    from dflash_compat.runtime.mlx_generate import spec_generate

    lengths: list[int] = []
    s.draft.eval()
    for prompt in s.prompts:
        result = spec_generate(s.draft, s.target, prompt, max_new_tokens=s.config.eval_new_tokens,
                               stop_token_ids=s.stop_ids, timed=False)
        lengths += result.stats.acceptance_lengths
    s.draft.train()
    return sum(lengths) / len(lengths) if lengths else None


def train_step_mlx(s: MLXSession, step: int, gamma: float) -> tuple[float, dict]:
    """One step on the global batch (one process: the whole of it), as loop._step."""
    import mlx.core as mx
    import mlx.optimizers as optim

    from dflash_compat.train.progress import learning_rate, stats_from_sums
    from dflash_compat.train.sampler import step_draw, weight_total

    c = s.config
    rows, anchors = step_draw(c.seed, step, s.ids.shape[0], c.batch_size, s.loss_mask, c.anchors)
    total = weight_total(s.loss_mask[rows], anchors, s.draft.block_size, gamma)
    _, grads, sums = block_loss_mlx(s.draft, s.target, s.ids[rows], s.loss_mask[rows], anchors, gamma, c.labels,
                                    total)
    grads, _ = optim.clip_grad_norm(grads, c.grad_clip)
    _set_lr(s.optimizer, learning_rate(c, step))
    s.optimizer.update(s.draft, grads)
    mx.eval(s.draft.parameters(), s.optimizer.state)
    return float(sums[0]) / total, stats_from_sums(sums, s.draft.block_size)


def run_training_mlx(s: MLXSession, *, log: Optional[Callable[[str], None]] = None):
    """The MLX run: progress lines (tokens/s, ETA), TensorBoard events, checkpoints, export, plot."""
    from dflash_compat.train.checkpoint import write_json
    from dflash_compat.train.observe import PLOT_FILE, open_event_log, plot_history
    from dflash_compat.train.progress import FIRST_LOGS, StopFlag, TrainResult, _round, learning_rate, progress_line

    c = s.config
    log = log or (lambda line: None)
    gamma = c.gamma or default_gamma(s.draft.block_size)
    s.draft.train()
    events = open_event_log(s.out, log, purge_from=s.start_step + 1 if s.start_step else None)
    started, loss, tau = time.perf_counter(), math.nan, None
    every_log = max(1, c.steps // 20)
    step = s.start_step
    stopping = False
    try:
        try:
            with StopFlag() as flag:
                for step in range(s.start_step, c.steps):
                    began = time.perf_counter()
                    loss, stats = train_step_mlx(s, step, gamma)
                    step_s = time.perf_counter() - began
                    evaluated = step + 1 == c.steps or bool(c.eval_every and (step + 1) % c.eval_every == 0)
                    if evaluated:
                        tau = held_out_tau_mlx(s)
                    s.history.append({"step": step + 1, "loss": loss, "block_tau": _round(stats["block_tau"]),
                                      "tau": _round(tau) if evaluated else None, "seconds": round(step_s, 4)})
                    done, elapsed = step + 1 - s.start_step, time.perf_counter() - started
                    rate = c.batch_size * c.seq_len * done / max(elapsed, 1e-9)
                    events.scalars(step + 1, {"train/loss": loss, "train/block_tau": stats["block_tau"],
                                              "train/lr": learning_rate(c, step), "train/tokens_per_s": rate,
                                              "eval/tau": tau if evaluated else None})
                    if (step + 1) % every_log == 0 or step + 1 == c.steps or done in FIRST_LOGS:
                        log(progress_line(step + 1, c.steps, loss, tau, elapsed, done, rate))
                    if flag.requested and step + 1 < c.steps:  # Ctrl-C: stop after this step, checkpointed
                        stopping = True
                        save_checkpoint_mlx(s, step + 1)
                        raise KeyboardInterrupt
                    if c.checkpoint_every and (step + 1) % c.checkpoint_every == 0 and step + 1 < c.steps:
                        save_checkpoint_mlx(s, step + 1)
        except KeyboardInterrupt:
            if not stopping:  # a second Ctrl-C, mid-step
                save_checkpoint_mlx(s, len(s.history))
            raise
        seconds = time.perf_counter() - started
        save_checkpoint_mlx(s, c.steps)
        export_mlx(s)
        write_json(s.out / "training.json", {
            "config": c.to_dict(), "framework": "mlx", "gamma": gamma, "data": s.data_summary,
            "seconds": round(seconds, 1), "ranks": 1, "global_batch": c.batch_size,
            "tokens_per_s": round(c.batch_size * c.seq_len * (c.steps - s.start_step) / max(seconds, 1e-9), 1),
            "history": s.history})
        plot_history(s.history, s.out / PLOT_FILE, log, title=f"{s.out.name}: loss and held-out tau (MLX)")
    finally:
        events.close()
    return TrainResult(s.out, c.steps, loss, tau, s.history, seconds)
