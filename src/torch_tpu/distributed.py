"""The ``tpu_dist`` backend of torch.distributed: collectives between the processes of one host.

Registered when torch_tpu loads, under ``tpu_dist`` and TorchTPU's name ``tpu``, and as the tpu
device's default, so ``dist.init_process_group()`` with no backend picks it on a tpu machine. It
serves tpu and CPU tensors. The ranks of a group meet in one POSIX shared-memory segment that rank 0
creates; its name travels through the group's c10d Store, and it is unlinked as soon as every rank
has opened it, so nothing is left in /dev/shm even when a process is killed.
"""

from __future__ import annotations

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


def _check_one_host(store: Any, rank: int, size: int) -> None:
    """Raises when the group's ranks are on different hosts: the transport is shared memory."""
    host = socket.gethostname()
    store.set(f"tpu_dist/host/{rank}", host)
    others = {store.get(f"tpu_dist/host/{r}").decode() for r in range(size)}
    if others != {host}:
        raise NotImplementedError(
            f"tpu_dist runs within one host for now; this group spans hosts {sorted(others)}"
        )


def _create_backend(opts: Any, _options: Any) -> Any:
    """The c10d creator (extended API): rendezvous through the Store, then open the segment."""
    store, rank, size = opts.store, opts.group_rank, opts.group_size
    _check_one_host(store, rank, size)
    if rank == 0:
        segment = f"/torch_tpu_{os.getpid()}_{secrets.token_hex(6)}"
        store.set(_SEGMENT_KEY, segment)
    else:
        segment = store.get(_SEGMENT_KEY).decode()
    return _C._TpuDistBackend(segment, rank, size, opts.timeout.total_seconds(), opts.group_id)


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
