"""Where gpt-small's training step spends its time on PyTorch CPU eager: GEMM, attention,
elementwise/normalization, optimizer and the rest, from torch.profiler. What fusion can win on
this machine is bounded by the elementwise/normalization share and the rest."""

from __future__ import annotations

import torch
from torch.autograd.profiler_util import FunctionEvent
from torch.profiler import ProfilerActivity, profile, record_function

from bench.contenders import CPU_EAGER
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
