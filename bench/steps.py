"""Model steps: forward+backward+AdamW ("train") and forward under no_grad ("infer") for every
contender, from the same initial weights and the same batches, interleaved and checked."""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

from bench import fused
from bench.checks import INFER_RTOL, LOSS_RTOL, NORM_RTOL, Check, check_series, norm_atol
from bench.contenders import CPU_EAGER, Contender, device_peak, enter, synchronize
from bench.memory import cpu_live_peak, live_tensors, rss_probe, storage_bytes
from bench.models import MODELS, build_model
from bench.timing import OK, Outcome, Probe, interleave, na

LR, WEIGHT_DECAY = 1e-3, 0.01
SEED = 0
TASKS = ("train", "infer")


def batches(model: str, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The data every contender sees: one fixed generator, a new batch per step."""
    gen = torch.Generator().manual_seed(SEED + 1)
    return [MODELS[model].batch(gen) for _ in range(count)]


class StepRunner:
    def __init__(
        self, model: str, task: str, c: Contender, data: list[tuple[torch.Tensor, torch.Tensor]]
    ):
        self.c, self.task = c, task
        enter(c)
        dev = torch.device(c.device)
        m = build_model(model, SEED)
        m.train(task == "train")
        self.model = m.to(dev)
        self.data = [(x.to(dev), y.to(dev)) for x, y in data]
        self.fn: Callable[..., torch.Tensor] = self.model
        if c.compile_backend is not None:
            self.fn = torch.compile(self.model, backend=c.compile_backend)
        self.opt = None
        if task == "train":
            self.opt = torch.optim.AdamW(
                self.model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY, **c.adamw
            )
        self.loss: torch.Tensor | None = None
        synchronize(c)

    def enter(self) -> None:
        enter(self.c)

    def run(self, i: int) -> None:
        x, y = self.data[i % len(self.data)]
        if self.opt is not None:
            loss = self.fn(x, y)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
        else:
            with torch.no_grad():
                loss = self.fn(x, y)
        self.loss = loss.detach()
        synchronize(self.c)

    def value(self) -> object:
        assert self.loss is not None
        return float(self.loss.item())

    def param_norms(self) -> list[float]:
        enter(self.c)
        return [float(p.detach().norm().item()) for p in self.model.parameters()]

    def param_sizes(self) -> list[int]:
        return [p.numel() for p in self.model.parameters()]


def make_checker(task: str, runners: dict[str, StepRunner], ref: str):  # noqa: ANN201
    """Losses (every one, warm-up and timed) and, at the end, every parameter's norm must match
    the PyTorch CPU eager reference within tolerance."""

    def check(values: dict[str, list[object]], final: bool) -> dict[str, Check]:
        out: dict[str, Check] = {}
        if ref not in values:
            return {
                n: Check(False, "the PyTorch CPU reference failed, nothing to compare with")
                for n in values
            }
        ref_losses = [float(v) for v in values[ref]]  # type: ignore[arg-type]
        ref_norms = runners[ref].param_norms() if final and task == "train" else []
        steps = len(values[ref])
        atol = [norm_atol(LR, steps, n) for n in runners[ref].param_sizes()]
        tol = LOSS_RTOL if task == "train" else INFER_RTOL
        for name, vals in values.items():
            c = check_series([float(v) for v in vals], ref_losses, tol, "loss")  # type: ignore[arg-type]
            if c.ok and ref_norms and name != ref:
                try:
                    norms = runners[name].param_norms()
                    n = check_series(norms, ref_norms, NORM_RTOL, "param norm", atol)
                    if len(norms) != len(ref_norms):  # e.g. .to(device) untied a shared weight
                        n = Check(False, f"{len(norms)} parameters vs {len(ref_norms)} on CPU")
                except Exception as e:
                    n = Check(False, f"reading parameter norms failed: {e}")
                c = n if not n.ok else Check(True, f"{c.detail}; norms {n.detail}")
            out[name] = Check(True, "reference") if name == ref and c.ok else c
        return out

    return check


def memory(runner: StepRunner, i: int, model: str, task: str, rss: set[str]) -> dict[str, object]:
    """Peak memory of one more step: the device's own peak on tpu; on CPU the peak of live tensor
    bytes (profiler) and, in a fresh process, the peak RSS."""
    if runner.c.is_tpu:
        runner.enter()  # the memory step runs in the contender's own eager mode too
        own = storage_bytes(live_tensors(runner, i))  # counted as for CPU live bytes
        with device_peak(runner.c) as peak:
            runner.run(i)
        return (
            {"device_peak_bytes": own + int(peak["bytes"])}
            if "bytes" in peak
            else {"memory_na": peak["reason"]}
        )
    d: dict[str, object] = {"live_peak_bytes": cpu_live_peak(runner, i)}
    if runner.c.name in rss:
        d.update(rss_probe(model, task, runner.c.name))
    else:
        d["rss_na"] = "peak RSS probed only for CPU eager (foreach) in --quick; see --full"
    return d


def run_model(
    model: str,
    task: str,
    contenders: list[Contender],
    avail: dict[str, str | None],
    warmup: int,
    reps: int,
    rss: set[str],
    min_time_s: float = 0.0,
    max_reps: int = 30,
) -> dict[str, Outcome]:
    data = batches(model, warmup + max(reps, max_reps) + 1)  # fast models get more rounds
    runners: dict[str, StepRunner] = {}
    out: dict[str, Outcome] = {}
    for c in contenders:
        reason = avail.get(c.name)
        if reason:
            out[c.name] = na(reason)
            continue
        try:
            runners[c.name] = StepRunner(model, task, c, data)
        except Exception as e:
            out[c.name] = na(f"setup failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
    check = make_checker(task, runners, CPU_EAGER.name)
    fused_runners = [n for n, r in runners.items() if r.c.is_fused]
    fused_na = fused.stats_reason() if fused_runners else None
    probes: dict[str, Probe] = {n: fused.read for n in fused_runners} if fused_na is None else {}
    out.update(interleave(runners, warmup, reps, check, True, min_time_s, max_reps, probes))  # type: ignore[arg-type]
    for name, o in out.items():
        if o.status == OK and name in probes:
            o.extra["fused"] = fused.summarize(o.probed, warmup)
        elif o.status == OK and name in fused_runners:
            o.extra["fused_na"] = fused_na
        if o.status == OK:
            try:
                o.extra.update(memory(runners[name], warmup + reps, model, task, rss))
            except Exception as e:
                o.extra["memory_na"] = f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"
    return {c.name: out[c.name] for c in contenders}


def run_models(
    models: list[str],
    contenders: list[Contender],
    avail: dict[str, str | None],
    runs: Callable[[str], tuple[int, int]],
    rss: set[str],
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
    min_time_s: float = 0.0,
    max_reps: int = 30,
) -> list[dict[str, object]]:
    rows = []
    for model in models:
        warmup, reps = runs(model)
        for task in TASKS:
            log(f"  model {model} {task}")
            res = run_model(model, task, contenders, avail, warmup, reps, rss, min_time_s, max_reps)
            for name, o in res.items():
                f = o.extra.get("fused")
                if isinstance(f, dict) and not f["recompile_check"]["ok"]:
                    log(f"  {name}: recompile check FAILED: {f['recompile_check']['detail']}")
            rows.append(
                {"model": model, "task": task, "results": {k: v.to_json() for k, v in res.items()}}
            )
    return rows
