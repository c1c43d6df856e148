"""Machine facts recorded with every run, and the run-wide settings every contender shares."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
CACHE = REPO / "build" / "bench"


def thread_count() -> int:
    """One thread per CPU this process may run on: the count every contender and limit uses."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def apply_settings(threads: int) -> None:
    """Same threads and true fp32 matmul for everyone (TF32-like shortcuts would flatter GEMMs)."""
    torch.set_num_threads(threads)
    torch.set_float32_matmul_precision("highest")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def torch_bf16_gemm_fast() -> bool:
    """Whether PyTorch CPU has a fast bf16 GEMM here: oneDNN's needs AVX-512 (BF16 or BW); without
    it torch.mm in bf16 runs a reference loop at about 1 GFLOP/s, so large bf16 GEMMs would take
    minutes per repetition."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def memory_bytes() -> int:
    try:
        m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        return int(m.group(1)) * 1024 if m else 0
    except OSError:
        return 0


def llc_bytes() -> int:
    """Size of the largest cache, so the bandwidth test can check its arrays exceed it."""
    best = 0
    for p in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        m = re.fullmatch(r"(\d+)([KMG]?)", p.read_text().strip())
        if m:
            best = max(
                best,
                int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)],
            )
    return best


def git_sha() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        )
        sha = out.stdout.strip() if out.returncode == 0 else "none (no commit yet)"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return sha + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def blas_info() -> str:
    m = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return m.group(1) if m else "unknown"


def machine_info(threads: int) -> dict[str, object]:
    physical = None
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except ImportError:
        pass
    return {
        "cpu_model": cpu_model(),
        "cores_logical": os.cpu_count() or 0,
        "cores_physical": physical,
        "memory_bytes": memory_bytes(),
        "llc_bytes": llc_bytes(),
        "avx512_bf16": "avx512_bf16" in cpu_flags(),
        "torch_bf16_gemm_fast": torch_bf16_gemm_fast(),
        "torch_version": torch.__version__,
        "torch_blas": blas_info(),
        "python": platform.python_version(),
        "git_sha": git_sha(),
        "threads": threads,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
