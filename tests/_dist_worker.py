"""One rank of a tests/test_dist.py scenario: ``_dist_worker.py SCENARIO RANK WORLD PORT OUT``.

Each scenario runs collectives on tpu tensors through tpu_dist and, for the oracle, on CPU tensors
through Gloo in the same process group ("cpu:gloo,tpu:tpu_dist"), and writes what it found to OUT
(a JSON list of failures, or the losses of a training run).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

Op = dist.ReduceOp
FLOATS = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
INTS = (torch.int32, torch.int64, torch.uint8, torch.int8)
REDUCE_OPS: dict[str, Any] = {
    "sum": Op.SUM,
    "avg": Op.AVG,
    "product": Op.PRODUCT,
    "min": Op.MIN,
    "max": Op.MAX,
    "band": Op.BAND,
    "bor": Op.BOR,
    "bxor": Op.BXOR,
    "premul_sum": dist._make_nccl_premul_sum(0.5),
}


def ops_for(dtype: torch.dtype) -> list[str]:
    if dtype == torch.bool:
        return ["sum", "product", "min", "max", "band", "bor", "bxor"]
    if dtype.is_complex:
        return ["sum", "avg", "premul_sum"]  # torch.distributed reduces them as real views
    if dtype.is_floating_point:
        return ["sum", "avg", "product", "min", "max", "premul_sum"]
    return ["sum", "avg", "product", "min", "max", "band", "bor", "bxor"]


def sample(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Deterministic inputs per rank: small values, so integer products do not overflow much."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point or dtype.is_complex:
        wide = torch.complex128 if dtype.is_complex else torch.float64
        return torch.randn(shape, generator=g, dtype=wide).to(dtype)
    return torch.randint(1, 4, shape, generator=g).to(dtype)


def gathered(t: torch.Tensor, world: int) -> list[torch.Tensor]:
    """Every rank's CPU tensor `t`, gathered through Gloo as bytes (Gloo's dtypes then suffice)."""
    flat = t.contiguous().reshape(-1).view(torch.uint8)
    parts = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(parts, flat)
    return [p.view(t.dtype).view(t.shape) for p in parts]


def reference(parts: list[torch.Tensor], op: str) -> torch.Tensor:
    """The reduction of `parts` in rank order as tpu_dist defines it (half types in float32)."""
    dtype = parts[0].dtype
    acc_dtype = torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype
    xs = [p.to(acc_dtype) for p in parts]
    if dtype == torch.bool:
        xs = [p.to(torch.uint8) for p in parts]
    out = xs[0].clone() if op != "premul_sum" else xs[0] * 0.5
    for x in xs[1:]:
        if op in ("sum", "avg"):
            out = out + x
        elif op == "premul_sum":
            out = out + x * 0.5
        elif op == "product":
            out = out * x
        elif op == "min":
            out = torch.minimum(out, x)
        elif op == "max":
            out = torch.maximum(out, x)
        elif op == "band":
            out = out & x
        elif op == "bor":
            out = out | x
        elif op == "bxor":
            out = out ^ x
    if dtype == torch.bool:
        return out > 0
    if op == "avg":
        out = (
            out / len(xs)
            if (dtype.is_floating_point or dtype.is_complex)
            else torch.div(out, len(xs), rounding_mode="trunc")
        )
    return out.to(dtype)


class Checker:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def same(self, what: str, actual: torch.Tensor, expected: torch.Tensor) -> None:
        actual = actual.cpu()
        if actual.dtype != expected.dtype or actual.shape != expected.shape:
            self.failures.append(
                f"{what}: {actual.dtype}{list(actual.shape)} is not "
                f"{expected.dtype}{list(expected.shape)}"
            )
            return
        exact = not (expected.dtype.is_floating_point or expected.dtype.is_complex)
        try:
            torch.testing.assert_close(
                actual,
                expected,
                rtol=0 if exact else None,
                atol=0 if exact else None,
                equal_nan=True,
            )
        except AssertionError as e:
            self.failures.append(f"{what}: {str(e).splitlines()[0]} {str(e).splitlines()[-1]}")


def check_reductions(rank: int, world: int, c: Checker) -> None:
    shapes = [(), (7,), (3, 5), (1 << 21) // 4 + 3]
    for dtype in (*FLOATS, *INTS, torch.bool, torch.complex64):
        for s, shape in enumerate(shapes):
            shape = shape if isinstance(shape, tuple) else (shape,)
            if s == 3 and dtype not in (torch.float32, torch.bfloat16, torch.int64):
                continue  # one size above a chunk per kind of arithmetic keeps the test short
            x = sample(shape, dtype, 1000 * rank + s)
            parts = gathered(x, world)
            for op in ops_for(dtype):
                t = x.to("tpu")
                dist.all_reduce(t, REDUCE_OPS[op])
                c.same(f"all_reduce {op} {dtype} {shape}", t, reference(parts, op))
            if dtype in (torch.float32, torch.int64) and s in (1, 2):
                gloo = x.clone()
                dist.all_reduce(gloo, Op.SUM)
                t = x.to("tpu")
                dist.all_reduce(t, Op.SUM)
                c.same(f"all_reduce vs gloo {dtype} {shape}", t, gloo)
                for root in range(world):
                    t = x.to("tpu")
                    dist.reduce(t, root, Op.MAX)
                    c.same(
                        f"reduce root {root} {dtype}",
                        t,
                        reference(parts, "max") if rank == root else x,
                    )


def check_movement(rank: int, world: int, c: Checker) -> None:
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.complex64):
        x = sample((4, 3), dtype, 7 + rank)
        parts = gathered(x, world)
        for root in range(world):
            t = x.to("tpu")
            dist.broadcast(t, root)
            c.same(f"broadcast root {root} {dtype}", t, parts[root])
        outs = [torch.empty_like(x, device="tpu") for _ in range(world)]
        dist.all_gather(outs, x.to("tpu"))
        for r in range(world):
            c.same(f"all_gather piece {r} {dtype}", outs[r], parts[r])
        out = torch.empty((4 * world, 3), dtype=dtype, device="tpu")
        dist.all_gather_into_tensor(out, x.to("tpu"))
        c.same(f"all_gather_into_tensor {dtype}", out, torch.cat(parts))
        gather_list = (
            [torch.empty_like(x, device="tpu") for _ in range(world)] if rank == 0 else None
        )
        dist.gather(x.to("tpu"), gather_list, dst=0)
        if rank == 0:
            for r in range(world):
                c.same(f"gather piece {r} {dtype}", gather_list[r], parts[r])
        out = torch.empty_like(x, device="tpu")
        scatter_list = [p.to("tpu") for p in parts] if rank == world - 1 else None
        dist.scatter(out, scatter_list, src=world - 1)
        c.same(f"scatter {dtype}", out, parts[rank])
    # reduce_scatter: rank r gets the sum of every rank's share r.
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        x = sample((world * 6, 2), dtype, 50 + rank)
        parts = gathered(x, world)
        expected = reference(parts, "sum").chunk(world)[rank]
        out = torch.empty((6, 2), dtype=dtype, device="tpu")
        dist.reduce_scatter_tensor(out, x.to("tpu"))
        c.same(f"reduce_scatter_tensor {dtype}", out, expected)
        out = torch.empty((6, 2), dtype=dtype, device="tpu")
        dist.reduce_scatter(out, [p.to("tpu") for p in x.chunk(world)])
        c.same(f"reduce_scatter {dtype}", out, expected)
    # all_to_all, even and uneven: rank r sends r + p + 1 rows to rank p.
    x = sample((world * 2, 3), torch.float32, 80 + rank)
    parts = gathered(x, world)
    out = torch.empty_like(x, device="tpu")
    dist.all_to_all_single(out, x.to("tpu"))
    c.same("all_to_all_single even", out, torch.cat([p.chunk(world)[rank] for p in parts]))
    send = [rank + p + 1 for p in range(world)]
    recv = [p + rank + 1 for p in range(world)]
    x = sample((sum(send), 3), torch.float32, 90 + rank)
    out = torch.empty((sum(recv), 3), device="tpu")
    dist.all_to_all_single(out, x.to("tpu"), recv, send)
    gloo_out = torch.empty((sum(recv), 3))
    dist.all_to_all_single(gloo_out, x, recv, send)
    c.same("all_to_all_single uneven", out, gloo_out)
    outs = [torch.empty((p + rank + 1, 3), device="tpu") for p in range(world)]
    dist.all_to_all(outs, [t.to("tpu") for t in x.split(send)])
    c.same("all_to_all list", torch.cat(outs), gloo_out)
    # Point to point, around the ring; one message larger than a mailbox.
    for n in (5, 1 << 20):
        x = sample((n,), torch.float32, 100 + rank)
        parts = gathered(x, world)
        got = torch.empty_like(x, device="tpu")
        ops = [
            dist.P2POp(dist.isend, x.to("tpu"), (rank + 1) % world),
            dist.P2POp(dist.irecv, got, (rank - 1) % world),
        ]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        c.same(f"send/recv ring {n}", got, parts[(rank - 1) % world])
    # Non-contiguous tensors and async handles.
    x = sample((6, 4), torch.float32, 110 + rank)
    parts = gathered(x, world)
    t = x.to("tpu").t()
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    c.same("all_reduce transposed", t, reference([p.t() for p in parts], "sum"))
    if not work.is_completed() or work.get_future().value()[0].device.type != "tpu":
        c.failures.append("work: not completed, or its future holds no tpu tensor")
    dist.barrier()


def scenario_collectives(rank: int, world: int) -> Any:
    c = Checker()
    check_reductions(rank, world, c)
    check_movement(rank, world, c)
    # A subgroup of ranks 0 and the last one, beside the world group.
    sub = dist.new_group([0, world - 1], backend="cpu:gloo,tpu:tpu_dist")
    if rank in (0, world - 1):
        t = torch.full((3,), float(rank + 1), device="tpu")
        dist.all_reduce(t, group=sub)
        c.same("subgroup all_reduce", t, torch.full((3,), float(world + 1)))
    dist.barrier()
    return c.failures


def scenario_async(rank: int, world: int) -> Any:
    """async_op collectives return at once, run after the work queued before them on the current
    stream (held back here by a stall), in order, and complete their futures and callbacks."""
    import torch_tpu

    t = torch.full((1 << 16,), float(rank + 1), device="tpu")
    torch_tpu._C._stall_stream(torch.tpu.current_device(), 2000)
    t.mul_(2)  # queued behind the stall: the all_reduce must see it
    start = time.monotonic()
    first = dist.all_reduce(t, async_op=True)
    second = dist.all_reduce(t, async_op=True)
    launch = time.monotonic() - start
    pending = not first.is_completed() and not second.is_completed()
    tenfold = second.get_future().then(lambda f: f.value()[0] * 10)
    second.wait()
    result = {
        "launch_seconds": launch,
        "pending_at_launch": pending,
        "first_done": first.is_completed(),
        "value": t[0].item(),
        "then": tenfold.wait()[0].item(),
    }
    dist.barrier()
    return result


def failing_all_reduce() -> dict[str, Any]:
    """An all_reduce expected to fail: its error and how long it took."""
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4, device="tpu"))
    except dist.DistBackendError as e:
        return {"error": str(e), "seconds": time.monotonic() - start}
    return {"error": None}


def scenario_absent(rank: int, world: int) -> Any:
    """The last rank never joins the all_reduce: the others fail within the timeout."""
    if rank == world - 1:
        time.sleep(8)
        return []
    return failing_all_reduce()


def scenario_exit(rank: int, world: int) -> Any:
    """The last rank exits before the all_reduce: the others fail at once, naming it."""
    dist.barrier()
    if rank == world - 1:
        os._exit(0)
    return failing_all_reduce()


def scenario_mismatch(rank: int, world: int) -> Any:
    """Ranks disagree on the size: every rank gets the error, then the process still computes."""
    try:
        dist.all_reduce(torch.ones(4 + rank, device="tpu"))
    except (ValueError, RuntimeError) as e:
        error = f"{type(e).__name__}: {e}"
    else:
        error = None
    return {"error": error, "after": (torch.ones(3, device="tpu") * 2).sum().item()}


def scenario_mismatch_between_hosts(rank: int, world: int) -> Any:
    """Split sizes of an all_to_all and a message size that do not match across hosts: a clear
    error (instead of Gloo aborting the process), then the group still works."""
    errors = []
    send = [1 + (rank == 0 and p == world - 1) for p in range(world)]
    try:
        out = torch.empty(world, device="tpu")
        dist.all_to_all_single(out, torch.ones(sum(send), device="tpu"), [1] * world, send)
    except ValueError as e:
        errors.append(str(e))
    peer = world - 1 - rank
    if rank in (0, world - 1):
        try:
            if rank == 0:
                dist.send(torch.ones(5, device="tpu"), peer)
            else:
                dist.recv(torch.empty(4, device="tpu"), peer)
        except ValueError as e:
            errors.append(str(e))
    t = torch.ones(3, device="tpu")
    dist.all_reduce(t)
    return {"errors": errors, "after": t.sum().item()}


def mlp() -> torch.nn.Sequential:
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def train_against_one_process(
    rank: int, world: int, parallelize: Callable[[torch.nn.Module], torch.nn.Module], split: bool
) -> dict[str, list[float]]:
    """SGD steps of an MLP made parallel by `parallelize` (on tpu) beside the same MLP trained by
    one CPU process on whole batches. With `split` each rank takes its share of a batch (data
    parallel) and the logged loss is the ranks' average; else every rank sees the whole batch."""
    torch.manual_seed(0)
    model, ref = mlp(), mlp()
    ref.load_state_dict(model.state_dict())
    model = parallelize(model.to("tpu"))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    losses, ref_losses = [], []
    for _ in range(5):
        x, y = torch.randn(4 * world, 8, generator=g), torch.randn(4 * world, 4, generator=g)
        mine = slice(4 * rank, 4 * rank + 4) if split else slice(None)
        loss = torch.nn.functional.mse_loss(model(x[mine].to("tpu")), y[mine].to("tpu"))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        if split:
            dist.all_reduce(total, Op.AVG)
        losses.append(total.item())
        ref_loss = torch.nn.functional.mse_loss(ref(x), y)
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        ref_losses.append(ref_loss.item())
    return {"losses": losses, "reference": ref_losses}


def scenario_ddp(rank: int, world: int) -> Any:
    """DDP on 2+ ranks against one process training on the whole batch: the same losses."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    return train_against_one_process(rank, world, DDP, split=True)


def scenario_ddp_local_rank(rank: int, world: int) -> Any:
    """DDP with each rank on its own chip, tpu:LOCAL_RANK, as a torchrun script sets it."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    local = int(os.environ["LOCAL_RANK"])
    torch.tpu.set_device(local)
    result = train_against_one_process(rank, world, DDP, split=True)
    result["device"] = torch.ones(1, device="tpu").device.index
    return result


def scenario_fsdp2(rank: int, world: int) -> Any:
    """FSDP2 (fully_shard per layer and at the root) against one process."""
    from torch.distributed.fsdp import fully_shard

    def shard(model: torch.nn.Module) -> torch.nn.Module:
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        return fully_shard(model)

    return train_against_one_process(rank, world, shard, split=True)


def scenario_tp(rank: int, world: int) -> Any:
    """DTensor tensor parallelism on a 1-d mesh (column- then row-wise Linear) against one process;
    each rank drives its own chip (tpu:rank), as DeviceMesh sets it from LOCAL_RANK."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    torch.tpu.set_device(rank)
    mesh = init_device_mesh("tpu", (world,))
    plan = {"0": ColwiseParallel(), "2": RowwiseParallel()}
    return train_against_one_process(
        rank, world, lambda m: parallelize_module(m, mesh, plan), split=False
    )


def scenario_dcp(rank: int, world: int) -> Any:
    """torch.distributed.checkpoint saves a sharded (FSDP2) model and loads it into another."""
    import shutil
    import tempfile

    import torch.distributed.checkpoint as dcp
    from torch.distributed.fsdp import fully_shard

    where = [tempfile.mkdtemp() if rank == 0 else None]
    dist.broadcast_object_list(where, 0)
    torch.manual_seed(0)
    a = fully_shard(mlp().to("tpu"))
    dcp.save(a.state_dict(), checkpoint_id=where[0])
    torch.manual_seed(1)
    b = fully_shard(mlp().to("tpu"))
    state = b.state_dict()
    dcp.load(state, checkpoint_id=where[0])
    b.load_state_dict(state)
    x = torch.randn(3, 8).to("tpu")
    same = [
        torch.equal(p.full_tensor().cpu(), q.full_tensor().cpu())
        for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    ]
    outputs_equal = torch.equal(a(x).cpu(), b(x).cpu())
    dist.barrier()
    if rank == 0:
        shutil.rmtree(where[0])
    return {"params_equal": all(same), "outputs_equal": outputs_equal}


SCENARIOS: dict[str, Callable[[int, int], Any]] = {
    "collectives": scenario_collectives,
    "async": scenario_async,
    "absent": scenario_absent,
    "exit": scenario_exit,
    "mismatch": scenario_mismatch,
    "mismatch_between_hosts": scenario_mismatch_between_hosts,
    "ddp": scenario_ddp,
    "ddp_local_rank": scenario_ddp_local_rank,
    "fsdp2": scenario_fsdp2,
    "tp": scenario_tp,
    "dcp": scenario_dcp,
}


def main() -> None:
    scenario, rank, world, port, out = (
        sys.argv[1],
        int(sys.argv[2]),
        int(sys.argv[3]),
        sys.argv[4],
        sys.argv[5],
    )
    timeout = timedelta(seconds=float(os.environ.get("TPU_DIST_TEST_TIMEOUT", "60")))
    # Empty: a bare init_process_group(), which picks the accelerator's default backend.
    backend = os.environ.get("TPU_DIST_TEST_BACKEND", "cpu:gloo,tpu:tpu_dist") or None
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=timeout
    )
    result = SCENARIOS[scenario](rank, world)
    with open(out, "w") as f:
        json.dump(result, f)
    if scenario in ("absent", "exit"):
        os._exit(0)  # the group is broken: skip teardown's collectives
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
