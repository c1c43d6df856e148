"""bench's limit probes and roofline arithmetic: the C library builds at the baseline ISA and its
loops return correct results on tiny sizes (nothing is timed here)."""

import ctypes
import math
import shutil
import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[1]))
from bench.limits import Limit, fp32_peak, merge, value  # noqa: E402
from bench.limits.build import FLAGS, load  # noqa: E402
from bench.opbench import apply_roofline, roofline  # noqa: E402


def lim(*samples: float) -> Limit:
    return Limit("x", "GB/s", list(samples))


def test_roof_is_best_repetition_and_merge_adds_samples() -> None:
    limits = {"stream_triad": lim(20.0, 30.0, 25.0)}
    assert value(limits, "stream_triad") == 30.0
    assert limits["stream_triad"].value.median == 25.0  # type: ignore[union-attr]
    merge(limits, {"stream_triad": lim(39.0), "sgemm": lim(200.0)})
    assert value(limits, "stream_triad") == 39.0 and limits["stream_triad"].value.n == 4  # type: ignore[union-attr]
    assert value(limits, "sgemm") == 200.0
    assert value(limits, "missing") is None
    assert lim().to_json()["status"] == "n/a"


def test_fp32_peak_takes_the_better_isa() -> None:
    assert fp32_peak({"fp32_fma_avx2": lim(200.0), "fp32_fma_avx512": lim(220.0)}) == 220.0
    assert fp32_peak({"fp32_fma_avx2": lim(200.0)}) == 200.0
    assert fp32_peak({}) is None


def test_roofline_fraction() -> None:
    limits = {"stream_triad": lim(40.0), "fp32_fma_avx2": lim(200.0), "bf16_dot_peak": lim(400.0)}
    add = {
        "group": "elementwise",
        "dtype": "float32",
        "flops": 1e6,
        "bytes": 12e6,
        "ops_per_call": 1,
    }
    r = roofline(add, 0.6e-3, limits)  # bandwidth-bound: t_min = 12e6 / 40e9 = 0.3 ms
    assert math.isclose(r["roofline_fraction"], 0.5)
    assert math.isclose(r["gbs"], 20.0)
    mm = {"group": "gemm", "dtype": "bfloat16", "flops": 8e9, "bytes": 1e6, "ops_per_call": 1}
    assert math.isclose(roofline(mm, 0.04, limits)["roofline_fraction"], 0.5)  # 8e9 / 400e9
    chain = {
        "group": "latency",
        "dtype": "float32",
        "flops": 1.0,
        "bytes": 1.0,
        "ops_per_call": 1000,
    }
    r = roofline(chain, 2e-3, limits)
    assert math.isclose(r["us_per_op"], 2.0) and "roofline_fraction" not in r
    assert "roofline_fraction" not in roofline(add, 1e-3, {})  # no limits: no fraction, no guess


def test_apply_roofline_touches_only_ok_results() -> None:
    rows = [
        {
            "group": "elementwise",
            "dtype": "float32",
            "flops": 1e6,
            "bytes": 12e6,
            "ops_per_call": 1,
            "results": {
                "cpu-eager": {"status": "ok", "wall_s": {"median": 0.6e-3}},
                "tpu-fused": {"status": "n/a", "reason": "not built"},
            },
        }
    ]
    apply_roofline(rows, {"stream_triad": lim(40.0), "fp32_fma_avx2": lim(200.0)})
    assert math.isclose(rows[0]["results"]["cpu-eager"]["roofline_fraction"], 0.5)
    assert rows[0]["results"]["tpu-fused"] == {"status": "n/a", "reason": "not built"}


def test_build_flags_stay_at_the_baseline_isa() -> None:
    assert not any(f.startswith(("-march", "-mavx", "-mfma")) for f in FLAGS)


@pytest.mark.skipif(
    shutil.which("gcc") is None and shutil.which("cc") is None, reason="no C compiler"
)
def test_c_probes_compute_correct_results(tmp_path: Path) -> None:
    lib = load(tmp_path)
    secs = (ctypes.c_double * 2)()
    assert lib.tpb_stream(1, 1 << 16, 2, 2, secs) == 0  # triad; the C side checks a = b + 3c
    assert lib.tpb_stream(0, 1 << 16, 1, 2, secs) == 0  # copy
    assert all(s > 0 for s in secs)
    check = ctypes.c_double()
    assert lib.tpb_peak(0, 1000, 2, ctypes.byref(check)) > 0  # the scalar loop runs anywhere
    assert check.value > 0
    isa = lib.tpb_isa()
    for code in (1, 2, 3):
        t = lib.tpb_peak(code, 1000, 1, ctypes.byref(check))
        assert (t > 0) == bool(isa & (1 << code))  # variants the CPU lacks refuse to run
    assert lib.tpb_peak_flops_per_iter(1) == 8 * 2 * 12
