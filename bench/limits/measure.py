"""The machine's limits, measured in the same run as everything else: STREAM copy/triad (C,
pthreads), FMA peak (C), and GEMM through torch.mm on the CPU (torch's own BLAS)."""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field

import torch

from bench.limits.build import BuildError, load
from bench.machine import blas_info, llc_bytes, torch_bf16_gemm_fast
from bench.stats import Summary, summarize

ISA_NAMES = {1: "AVX2+FMA", 2: "AVX-512", 3: "AVX-512 BF16", 4: "AVX-512 VNNI"}


@dataclass
class Limit:
    label: str
    unit: str
    samples: list[float] = field(default_factory=list)  # one rate per repetition
    method: str = ""
    reason: str = ""  # why there is no value

    @property
    def value(self) -> Summary | None:
        return summarize(self.samples) if self.samples else None

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"label": self.label, "unit": self.unit, "method": self.method}
        if self.value is not None:
            d.update(status="ok", value=self.value.to_json())
        else:
            d.update(status="n/a", reason=self.reason)
        return d


def stream_elements() -> int:
    """Doubles per array: 8x the last-level cache and at least 256 MiB, so caches cannot help."""
    return max(8 * llc_bytes(), 256 << 20) // 8


def stream(lib: ctypes.CDLL, kind: int, threads: int, reps: int) -> list[float]:
    n = stream_elements()
    secs = (ctypes.c_double * (reps + 1))()
    rc = lib.tpb_stream(kind, n, threads, reps + 1, secs)
    if rc != 0:
        raise RuntimeError(
            "stream probe failed" + (": wrong result" if rc == -2 else ": no memory")
        )
    per_elem = 16 if kind == 0 else 24
    return [per_elem * n / s / 1e9 for s in list(secs)[1:]]  # the first repetition is a warm-up


def peak(lib: ctypes.CDLL, isa: int, threads: int, reps: int, seconds: float) -> list[float]:
    check = ctypes.c_double()
    iters = 1_000_000
    t = lib.tpb_peak(isa, iters, threads, ctypes.byref(check))
    if t <= 0:
        raise RuntimeError(f"{ISA_NAMES.get(isa, isa)} loop cannot run here")
    iters = max(iters, int(iters * seconds / t))
    rates = []
    for _ in range(reps):
        t = lib.tpb_peak(isa, iters, threads, ctypes.byref(check))
        if not check.value > 0:  # the loop's results must exist, or it was optimized away
            raise RuntimeError("peak loop produced no result")
        rates.append(lib.tpb_peak_flops_per_iter(isa) * iters * threads / t / 1e9)
    return rates


def torch_gemm(n: int, dtype: torch.dtype, warmup: int, reps: int) -> list[float]:
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(dtype)
    b = torch.randn(n, n, generator=gen).to(dtype)
    c = torch.empty(n, n, dtype=dtype)
    for _ in range(warmup):
        torch.mm(a, b, out=c)
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        rates.append(2 * n**3 / (time.perf_counter() - t0) / 1e9)
    return rates


def measure_limits(threads: int, quick: bool) -> dict[str, Limit]:
    reps = 5 if quick else 15
    out: dict[str, Limit] = {}
    mib = stream_elements() * 8 >> 20
    st = f"C, {threads} pthreads, 3 arrays x {mib} MiB doubles, STREAM byte counting"
    out["stream_copy"] = Limit("STREAM copy", "GB/s", method=st)
    out["stream_triad"] = Limit("STREAM triad", "GB/s", method=st)
    fma = f"C, {threads} threads, independent FMA chains in registers"
    out["fp32_fma_avx2"] = Limit("fp32 FMA peak (AVX2)", "GFLOP/s", method=fma)
    out["fp32_fma_avx512"] = Limit("fp32 FMA peak (AVX-512)", "GFLOP/s", method=fma)
    out["bf16_dot_peak"] = Limit("bf16 dot peak (vdpbf16ps)", "GFLOP/s", method=fma)
    out["int8_dot_peak"] = Limit("int8 dot peak (vpdpbusd)", "GOP/s", method=fma)
    try:
        lib = load()
        isa = lib.tpb_isa()
    except (BuildError, OSError) as e:
        for lim in out.values():
            lim.reason = f"C probes unavailable: {e}"
        lib, isa = None, 0
    if lib is not None:
        for name, kind in (("stream_copy", 0), ("stream_triad", 1)):
            try:
                out[name].samples = stream(lib, kind, threads, 10 if quick else 30)
            except RuntimeError as e:
                out[name].reason = str(e)
        for name, code in (
            ("fp32_fma_avx2", 1),
            ("fp32_fma_avx512", 2),
            ("bf16_dot_peak", 3),
            ("int8_dot_peak", 4),
        ):
            if not isa & (1 << code):
                out[name].reason = f"CPU lacks {ISA_NAMES[code]}"
                continue
            out[name].samples = peak(lib, code, threads, reps, 0.15 if quick else 0.5)

    def blas(n: int) -> str:
        return f"torch.mm n={n}, torch CPU BLAS (BLAS_INFO={blas_info()}), {threads} threads"

    out["sgemm"] = Limit(
        "sgemm (torch.mm fp32)",
        "GFLOP/s",
        torch_gemm(4096, torch.float32, 1, 3 if quick else 7),
        blas(4096),
    )
    fast = torch_bf16_gemm_fast()
    nb = 4096 if fast else 512  # PyTorch's reference loop takes seconds per GFLOP
    slow = "" if fast else "; no oneDNN bf16 kernel for this CPU: PyTorch's reference loop"
    out["bf16_gemm"] = Limit(
        "bf16 GEMM (torch.mm bf16)",
        "GFLOP/s",
        torch_gemm(nb, torch.bfloat16, 1, 3 if quick else 7),
        blas(nb) + slow,
    )
    return out


def merge(into: dict[str, Limit], more: dict[str, Limit]) -> None:
    """Adds a later pass's repetitions: probes spread over the run are likelier to catch the
    shared machine quiet at least once."""
    for name, lim in more.items():
        if name not in into:
            into[name] = lim
        elif lim.samples:
            into[name].samples += lim.samples
            into[name].reason = ""


def fp32_peak(limits: dict[str, Limit]) -> float | None:
    """The fp32 roof: the better of the two FMA variants."""
    vals = [v for v in (value(limits, "fp32_fma_avx2"), value(limits, "fp32_fma_avx512")) if v]
    return max(vals) if vals else None


def value(limits: dict[str, Limit], name: str) -> float | None:
    """A limit's roof: the best of its repetitions, as STREAM reports. On a shared machine a
    neighbour's load only ever lowers a repetition, so the best one is the machine's capability."""
    lim = limits.get(name)
    return lim.value.max if lim is not None and lim.value is not None else None
