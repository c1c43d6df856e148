"""The ``tpu_dist`` backend of torch.distributed.

Registered when torch_tpu loads, under ``tpu_dist`` and TorchTPU's name ``tpu``, and as the tpu
device's default, so ``dist.init_process_group()`` with no backend picks it on a tpu machine. It
serves tpu and CPU tensors. The ranks of one host meet in a POSIX shared-memory segment that the
host's first rank creates; its name travels through the group's c10d Store, and it is unlinked as
soon as every rank has opened it, so nothing is left in /dev/shm even when a process is killed. A
group that spans hosts (by hostname, or as TORCH_TPU_DEVICES_PER_HOST lays it out) adds Gloo between
the hosts' leaders for reductions and broadcasts, and Gloo between all ranks for all-to-all and
point-to-point messages that cross hosts.
"""

from __future__ import annotations

import atexit
import functools
import os
import secrets
import socket
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from . import _C

BACKEND = "tpu_dist"
ALIASES = (BACKEND, "tpu")
# The devices whose tensors the backend reduces; "tpu" makes it that device's default backend.
DEVICES = ["tpu", "cpu"]

_SEGMENT_KEY = "tpu_dist/segment"
PER_HOST_VAR = "TORCH_TPU_DEVICES_PER_HOST"


def _host_name(global_rank: int) -> str:
    """The host a rank runs on: its hostname, or its block of TORCH_TPU_DEVICES_PER_HOST ranks."""
    per_host = os.environ.get(PER_HOST_VAR, "")
    if not per_host:
        return socket.gethostname()
    if not per_host.isdigit() or int(per_host) < 1:
        raise ValueError(f"{PER_HOST_VAR} must be a positive integer, not {per_host!r}")
    return f"{socket.gethostname()}/{global_rank // int(per_host)}"


def _hosts(opts: Any) -> list[int]:
    """Each group rank's host, through the Store; hosts numbered in order of their lowest rank."""
    store, rank, size = opts.store, opts.group_rank, opts.group_size
    global_ranks = opts.global_ranks_in_group or list(range(size))
    store.set(f"tpu_dist/host/{rank}", _host_name(global_ranks[rank]))
    index: dict[str, int] = {}
    names = [store.get(f"tpu_dist/host/{r}").decode() for r in range(size)]
    return [index.setdefault(name, len(index)) for name in names]


def _shared_memory_backend(opts: Any, key: str, rank: int, size: int) -> Any:
    """The one-host backend of `size` ranks; the first creates the segment, named under `key`."""
    if rank == 0:
        segment = f"/torch_tpu_{os.getpid()}_{secrets.token_hex(6)}"
        opts.store.set(key, segment)
    else:
        segment = opts.store.get(key).decode()
    return _C._TpuDistBackend(segment, rank, size, opts.timeout.total_seconds(), opts.group_id)


def _create_backend(opts: Any, _options: Any) -> Any:
    """The c10d creator (extended API): rendezvous through the Store, then open the segment, and
    where the group spans hosts, the Gloo groups of host leaders and of every rank."""
    rank, size = opts.group_rank, opts.group_size
    hosts = _hosts(opts)
    if max(hosts) == 0:
        return _shared_memory_backend(opts, _SEGMENT_KEY, rank, size)
    mine = [r for r in range(size) if hosts[r] == hosts[rank]]
    local = _shared_memory_backend(
        opts, f"{_SEGMENT_KEY}/{hosts[rank]}", mine.index(rank), len(mine)
    )
    leaders = None
    if mine[0] == rank:
        store = dist.PrefixStore("tpu_dist/leaders/", opts.store)
        leaders = dist.ProcessGroupGloo(store, hosts[rank], max(hosts) + 1, opts.timeout)
    store = dist.PrefixStore("tpu_dist/world/", opts.store)
    world = dist.ProcessGroupGloo(store, rank, size, opts.timeout)
    return _C._TpuDistHierarchy(rank, size, hosts, local, leaders, world, opts.group_id)


def _only_tpu_dist(pg: Any) -> bool:
    """Whether process group `pg` holds tpu_dist and no Gloo backend."""
    try:
        pg._get_backend(torch.device("cpu"))
    except RuntimeError:
        try:
            return isinstance(pg._get_backend(torch.device("tpu")), _C._TpuDistBackend)
        except RuntimeError:
            return False
    return False


def _default_backend_fixed(helper: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps torch.distributed's group constructor for bare ``init_process_group()``.

    Without a backend, PyTorch 2.13 builds only the accelerator's backend (tpu_dist here) but
    names Gloo the group's default unless the backend is NCCL; DDP then fails to find it. A group
    that holds only tpu_dist gets it as its default instead.
    """

    @functools.wraps(helper)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        made = helper(*args, **kwargs)
        pg = made[0] if isinstance(made, tuple) else made
        if isinstance(pg, dist.ProcessGroup) and _only_tpu_dist(pg):
            pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)
        return made

    return wrapped


def register() -> None:
    """Registers the backend's names with torch.distributed (once)."""
    for name in ALIASES:
        if name.upper() not in dist.Backend._plugins:
            dist.Backend.register_backend(name, _create_backend, extended_api=True, devices=DEVICES)
    helper = distributed_c10d._new_process_group_helper
    if not hasattr(helper, "__wrapped__"):
        distributed_c10d._new_process_group_helper = _default_backend_fixed(helper)
        # Before the interpreter finalizes: a backend thread that drops a tensor's last reference
        # needs the GIL, and a thread taking it during finalization is torn down mid-call.
        atexit.register(_C._tpu_dist_stop_threads)
