"""Where gpt-small's training step spends its time on PyTorch CPU eager: GEMM, attention,
elementwise/normalization, optimizer and the rest, from torch.profiler. What fusion can win on
this machine is bounded by the elementwise/normalization share and the rest.

And where gpt-tiny's training step spends the simulated chip's time: its kernels by category in
debug mode (each op's kernel time from the op trace), beside the strict and fused steps and the
part of the fused step in which Python records the forward while the device waits."""

from __future__ import annotations

import statistics
import time

import torch
from torch.autograd.profiler_util import FunctionEvent
from torch.profiler import ProfilerActivity, profile, record_function

from bench.contenders import CPU_EAGER, TPU_MODES, Contender
from bench.quiet import quiet_stderr
from bench.steps import StepRunner, batches

CATEGORIES = ("GEMM", "attention", "elementwise/normalization", "optimizer", "rest")
GEMM_OPS = {
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::addbmm",
    "aten::matmul",
    "aten::linear",
}
ATTENTION_MARKS = ("scaled_dot_product", "flash_attention", "efficient_attention")
# Leaf ops that move no data: their time is dispatch overhead and belongs to "rest".
NO_DATA_OPS = {
    "aten::view",
    "aten::reshape",
    "aten::_reshape_alias",
    "aten::_unsafe_view",
    "aten::t",
    "aten::transpose",
    "aten::permute",
    "aten::expand",
    "aten::as_strided",
    "aten::split",
    "aten::split_with_sizes",
    "aten::slice",
    "aten::select",
    "aten::unsqueeze",
    "aten::squeeze",
    "aten::flatten",
    "aten::unflatten",
    "aten::detach",
    "aten::detach_",
    "aten::alias",
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::resize_",
    "aten::lift_fresh",
    "aten::contiguous",
    "aten::numpy_T",
    "aten::is_nonzero",
    "aten::item",
    "aten::_local_scalar_dense",
}
STEP_MARK = "bench::step"


def categorize(ev: FunctionEvent, acc: dict[str, float]) -> None:
    """Adds ev's time (µs) to its category; uncategorized parents are split among their children."""
    name = ev.name
    if name.startswith("Optimizer.step"):
        acc["optimizer"] += ev.cpu_time_total
    elif any(m in name for m in ATTENTION_MARKS):
        acc["attention"] += ev.cpu_time_total
    elif name in GEMM_OPS:
        acc["GEMM"] += ev.cpu_time_total
    elif not ev.cpu_children:
        if name.startswith("aten::") and name not in NO_DATA_OPS:
            acc["elementwise/normalization"] += ev.self_cpu_time_total
    else:
        for child in ev.cpu_children:
            categorize(child, acc)


def split(events: list[FunctionEvent]) -> dict[str, float]:
    """Seconds per step in each category; "rest" is the step's time not inside any category."""
    steps = [e for e in events if e.name == STEP_MARK]
    if not steps:
        raise RuntimeError("no profiled step found")
    acc = dict.fromkeys(CATEGORIES, 0.0)
    for s in steps:
        for child in s.cpu_children:
            categorize(child, acc)
    total = sum(s.cpu_time_total for s in steps)
    acc["rest"] = max(0.0, total - sum(acc.values()))
    return {k: v / len(steps) / 1e6 for k, v in acc.items()}


def time_split(model: str = "gpt-small", warmup: int = 1, steps: int = 2) -> dict[str, object]:
    data = batches(model, warmup + steps)
    r = StepRunner(model, "train", CPU_EAGER, data)
    for i in range(warmup):
        r.run(i)
    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(warmup, warmup + steps):
            with record_function(STEP_MARK):
                r.run(i)
    per_step = split(list(prof.events()))
    total = sum(per_step.values())
    return {
        "model": model,
        "contender": CPU_EAGER.name,
        "steps": steps,
        "threads": torch.get_num_threads(),
        "step_s": total,
        "seconds": per_step,
        "fraction": {k: v / total for k, v in per_step.items()},
    }


DEVICE_CATEGORIES = ("GEMM", "attention", "elementwise/normalization", "optimizer")
DEVICE_GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "addmv", "dot", "vdot"}


def _tpu(mode: str) -> Contender:
    return next(c for c in TPU_MODES if c.eager_mode == mode)


def _kernel_seconds(r: StepRunner, steps: int) -> dict[str, float]:
    """Kernel time per step by category: the debug op trace of forward and backward, and of the
    optimizer step apart."""
    acc = dict.fromkeys(DEVICE_CATEGORIES, 0.0)
    assert r.opt is not None
    for i in range(steps):
        x, y = r.data[i % len(r.data)]
        with torch.tpu.debug_op_trace() as model_ops:
            r.fn(x, y).backward()
        with torch.tpu.debug_op_trace() as optimizer_ops:
            r.opt.step()
            r.opt.zero_grad(set_to_none=True)
        torch.tpu.synchronize()
        for e in model_ops:
            if e.op in DEVICE_GEMM_OPS:
                acc["GEMM"] += e.time_us
            elif e.op.startswith("scaled_dot_product"):
                acc["attention"] += e.time_us
            else:
                acc["elementwise/normalization"] += e.time_us
        acc["optimizer"] += sum(e.time_us for e in optimizer_ops)
    return {k: v / steps / 1e6 for k, v in acc.items()}


def _phases(r: StepRunner, steps: int) -> tuple[float, float]:
    """Median seconds of the forward call (recording, in fused mode) and of the whole step."""
    forward, whole = [], []
    assert r.opt is not None
    for i in range(steps):
        x, y = r.data[i % len(r.data)]
        t0 = time.perf_counter()
        loss = r.fn(x, y)
        t1 = time.perf_counter()
        loss.backward()
        r.opt.step()
        r.opt.zero_grad(set_to_none=True)
        torch.tpu.synchronize()
        forward.append(t1 - t0)
        whole.append(time.perf_counter() - t0)
    return statistics.median(forward), statistics.median(whole)


def device_split(model: str = "gpt-tiny", warmup: int = 3, steps: int = 20) -> dict[str, object]:
    data = batches(model, 4)
    runners = {m: StepRunner(model, "train", _tpu(m), data) for m in ("debug", "strict", "fused")}
    for r in runners.values():
        r.enter()
        for i in range(warmup):
            r.run(i)
    runners["debug"].enter()
    kernels = _kernel_seconds(runners["debug"], steps)
    timed = {}
    for m in ("strict", "fused"):
        runners[m].enter()
        timed[m] = _phases(runners[m], steps)
    return {
        "model": model,
        "steps": steps,
        "kernel_s": kernels,
        "kernels_total_s": sum(kernels.values()),
        "strict_step_s": timed["strict"][1],
        "fused_step_s": timed["fused"][1],
        "fused_forward_record_s": timed["fused"][0],
    }
