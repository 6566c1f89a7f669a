"""Training on several processes: torch.distributed as torchrun sets it up, never a launcher of our own.

    torchrun --nproc-per-node 4 $(which dflash-check) train ...      # or: dflash-check train --nproc-per-node 4
    torchrun --nnodes 2 --node-rank R --rdzv-backend c10d --rdzv-endpoint HOST:29500 --nproc-per-node 8 ...

A run is distributed when torchrun's environment says so (WORLD_SIZE > 1). Each rank joins one process
group (gloo on the CPU, nccl on GPUs, one GPU per local rank), the draft is wrapped in
DistributedDataParallel, and the frozen target is either replicated or, with `--shard-target`, has its
decoder layers sharded with FSDP2's `fully_shard` (the embedding, final norm and head stay replicated:
the draft borrows them every step). The group is destroyed on every way out of `session()`.

`launch()` is `train --nproc-per-node N`: it runs torch's own elastic launcher (torch.distributed.run)
in this process, which starts N copies of `python -m dflash_compat train ...` and stops them all when one
fails or this process is interrupted.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence, TypeVar

from dflash_compat.exceptions import EXIT_INTERNAL, DFlashCompatError, InputError

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["Dist", "SINGLE", "from_env", "session", "agree", "all_sum", "launch", "shard_layers", "SHARD_CHOICES",
           "INIT_TIMEOUT_S"]

SHARD_CHOICES = ("auto", "never", "always")
# how long a collective may wait for the other ranks (torch's default for gloo is 30 min as well): a rank that
# died is noticed by the elastic agent, which stops the others, long before this
INIT_TIMEOUT_S = 1800
T = TypeVar("T")


@dataclass(frozen=True)
class Dist:
    """This process's place in the run: rank 0 of 1 when not distributed."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1
    backend: Optional[str] = None  # gloo | nccl while a process group is up

    @property
    def active(self) -> bool:
        return self.world > 1

    @property
    def main(self) -> bool:
        return self.rank == 0


SINGLE = Dist()


def _int_env(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise InputError(f"{name}={value!r} in the environment is not an integer (torchrun sets it)") from None


def from_env() -> Dist:
    """torchrun's RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE (SINGLE without them)."""
    world = _int_env("WORLD_SIZE", 1)
    if world <= 1:
        return SINGLE
    rank, local = _int_env("RANK", 0), _int_env("LOCAL_RANK", 0)
    local_world = _int_env("LOCAL_WORLD_SIZE", world)
    if not (0 <= rank < world and 0 <= local < local_world):
        raise InputError(f"RANK={rank} / LOCAL_RANK={local} do not fit WORLD_SIZE={world} / "
                         f"LOCAL_WORLD_SIZE={local_world}; start the ranks with torchrun")
    return Dist(rank, world, local, local_world)


@contextmanager
def session(device: str) -> Iterator[Dist]:
    """Join the process group torchrun describes (nothing to do for one process), and always leave it.
    `device` (auto | cpu | cuda) picks the backend: nccl with one GPU per local rank, else gloo."""
    dist_env = from_env()
    if not dist_env.active:
        yield dist_env
        return
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if use_cuda:
        if not torch.cuda.is_available():
            raise InputError("--device cuda: no CUDA GPU is available to this torch build")
        if dist_env.local_rank >= torch.cuda.device_count():
            raise InputError(f"local rank {dist_env.local_rank} has no GPU of its own: this node has "
                             f"{torch.cuda.device_count()}; pass --nproc-per-node {torch.cuda.device_count()} or less")
        torch.cuda.set_device(dist_env.local_rank)
    backend = "nccl" if use_cuda else "gloo"
    kwargs: dict[str, Any] = {"backend": backend, "timeout": timedelta(seconds=INIT_TIMEOUT_S)}
    if use_cuda:
        kwargs["device_id"] = torch.device("cuda", dist_env.local_rank)
    dist.init_process_group(**kwargs)
    try:
        yield Dist(dist_env.rank, dist_env.world, dist_env.local_rank, dist_env.local_world, backend)
    finally:
        dist.destroy_process_group()


class AgreedError(InputError):
    """An error rank 0 found and reported; the other ranks stop with its exit code, silently."""

    quiet = True


def agree(d: Dist, check: Callable[[], T], share: bool = False) -> T:
    """Run `check` on rank 0 first: if it raises one of our errors, rank 0 reports it and every other
    rank stops with the same exit code, without a second copy of the line; if it passes, the other
    ranks run it too (`share`: they take rank 0's result instead). One process: just `check()`."""
    if not d.active:
        return check()
    import torch.distributed as dist

    outcome: list[Any] = [None, None]
    if d.main:
        try:
            result = check()
        except DFlashCompatError as exc:
            outcome[0] = (str(exc), exc.exit_code)
            dist.broadcast_object_list(outcome, src=0)
            raise
        outcome[1] = result if share else None
    dist.broadcast_object_list(outcome, src=0)
    if outcome[0] is not None:
        err = AgreedError(outcome[0][0])
        err.exit_code = outcome[0][1]
        raise err
    if d.main:
        return result
    return outcome[1] if share else check()


def all_sum(d: Dist, tensor: "torch.Tensor") -> "torch.Tensor":
    """Sum over the ranks, in place (a float64 CPU tensor goes through the backend's device)."""
    if not d.active:
        return tensor
    import torch
    import torch.distributed as dist

    if d.backend == "nccl":
        moved = tensor.to(torch.device("cuda", torch.cuda.current_device()))
        dist.all_reduce(moved)
        tensor.copy_(moved.to(tensor.device))
    else:
        dist.all_reduce(tensor)
    return tensor


def shard_layers(layers: Sequence[Any], device: "torch.device", d: Dist) -> None:
    """FSDP2 on each decoder layer of the frozen target, in place: each rank keeps 1/world of every layer's
    weights and gathers one layer at a time during the forward (reshard_after_forward)."""
    from torch.distributed.device_mesh import init_device_mesh

    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:  # torch < 2.6 keeps it under _composable
        from torch.distributed._composable.fsdp import fully_shard  # type: ignore[no-redef]

    mesh = init_device_mesh(device.type, (d.world,))
    for layer in layers:
        fully_shard(layer, mesh=mesh, reshard_after_forward=True)


def check_nproc(nproc: int, device: str) -> None:
    """--nproc-per-node, checked before torch is imported where it can be: at least 2 ranks, and on GPUs no
    more than there are (checked once torch is there)."""
    if nproc < 2:
        raise InputError(f"--nproc-per-node {nproc}: give 2 or more ranks (leave it out to train in one process)")
    cores = os.cpu_count() or 1
    if device == "cpu" and nproc > 4 * cores:
        raise InputError(f"--nproc-per-node {nproc}: more than 4 ranks per CPU core ({cores} cores) would only "
                         "wait on each other")


def launch(nproc: int, args: Sequence[str], *, threads: Optional[int] = None) -> int:
    """Run `python -m dflash_compat train ARGS` on `nproc` ranks of this machine through
    torch.distributed.run (standalone rendezvous on a free local port, no restarts). -> the exit code:
    0, or the first failed rank's (its one-line error is its own)."""
    import logging

    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    # torchrun's banner, its signal warnings and its failure report (a table with a traceback hint) would bury the
    # rank's own line: elastic's loggers set their own levels (LOGLEVEL), so each is quietened by name
    for name in [n for n in logging.root.manager.loggerDict if n.startswith("torch.distributed")]:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads or 1))
    launcher = ["--nproc-per-node", str(nproc), "--standalone", "--max-restarts", "0", "--monitor-interval", "0.5",
                "--module", "dflash_compat", "train", *args]
    from torch.distributed.elastic.multiprocessing.api import SignalException

    try:
        run(get_args_parser().parse_args(launcher))
    except SignalException as exc:  # SIGTERM / SIGHUP to the launcher: the agent has stopped the ranks
        return 128 + int(exc.sigval)
    except ChildFailedError as exc:
        codes = [f.exitcode for f in exc.failures.values()]
        normal = [c for c in codes if c > 0]
        if normal:
            return normal[0]
        err = DFlashCompatError(f"a training rank was killed (signal {-codes[0]}); see the lines above")
        err.exit_code = EXIT_INTERNAL
        raise err from None
    return 0
