"""Compile the C limit probes with the system C compiler into a cache under build/bench/.

Flags stay at the baseline ISA (-O3, no -march): the AVX2/AVX-512 code paths carry their own
function-level target attributes and are chosen by cpuid at run time, so the cached library is
correct on any x86-64 machine that shares this checkout."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from bench.machine import CACHE

SOURCES = ("stream.c", "peak.c")
HERE = Path(__file__).resolve().parent
FLAGS = ["-O3", "-std=gnu11", "-fPIC", "-shared", "-pthread", "-Wall", "-Wextra"]


class BuildError(RuntimeError):
    pass


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise BuildError("no C compiler (gcc/cc) on PATH")
    return cc


def library_path(cache: Path = CACHE) -> Path:
    """Build the probe library if its sources, flags or compiler changed; return its path."""
    cc = compiler()
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256()
    for part in (cc, version, " ".join(FLAGS), *((HERE / s).read_text() for s in SOURCES)):
        key.update(part.encode())
    target = cache / f"limits-{key.hexdigest()[:16]}" / "liblimits.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    cmd = [cc, *FLAGS, "-o", str(tmp), *(str(HERE / s) for s in SOURCES)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} failed: {done.stderr.strip()[:300]}")
    tmp.replace(target)  # atomic, so a concurrent run never loads a half-written library
    return target


def load(cache: Path = CACHE) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(library_path(cache)))
    lib.tpb_stream.argtypes = [
        ctypes.c_int,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_double),
    ]
    lib.tpb_stream.restype = ctypes.c_int
    lib.tpb_isa.argtypes = []
    lib.tpb_isa.restype = ctypes.c_int
    lib.tpb_peak_flops_per_iter.argtypes = [ctypes.c_int]
    lib.tpb_peak_flops_per_iter.restype = ctypes.c_double
    lib.tpb_peak.argtypes = [
        ctypes.c_int,
        ctypes.c_long,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_double),
    ]
    lib.tpb_peak.restype = ctypes.c_double
    return lib
