"""bench's JSON document: the schema validator and the report rendered from it, including how
n/a and wrong contenders appear (never with a figure)."""

import copy
import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))
from bench.plan import SECTIONS, parse_only  # noqa: E402
from bench.report import render  # noqa: E402
from bench.results import SCHEMA, validate, write  # noqa: E402


def summary(m: float) -> dict[str, Any]:
    return {"median": m, "min": m * 0.9, "max": m * 1.2, "n": 5}


def ok(wall: float, **extra: Any) -> dict[str, Any]:
    return {
        "status": "ok",
        "wall_s": summary(wall),
        "cpu_s": summary(wall * 1.5),
        "first_s": wall * 3,
        **extra,
    }


def doc() -> dict[str, Any]:
    cs = [
        ("cpu-eager", "CPU eager", "cpu", None),
        ("tpu-debug", "tpu debug", "tpu", None),
        ("tpu-fused", "tpu fused", "tpu", "eager mode 'fused' not implemented"),
    ]
    return {
        "schema": SCHEMA,
        "created": "2026-01-02T03:04:05",
        "mode": "quick",
        "command": "python -m bench.run --quick",
        "runtime_s": 321.0,
        "machine": {
            "cpu_model": "AMD EPYC",
            "cores_logical": 2,
            "cores_physical": 2,
            "memory_bytes": 24 << 30,
            "llc_bytes": 32 << 20,
            "torch_version": "2.13.0+cpu",
            "torch_blas": "mkl",
            "git_sha": "abc",
            "threads": 2,
            "float32_matmul_precision": "highest",
        },
        "load_avg": {"start": [0.1, 0.2, 0.3], "end": [0.4, 0.5, 0.6]},
        "settings": {
            "warmup": 2,
            "reps": 5,
            "op_warmup": 1,
            "op_reps": 5,
            "tolerances": {"loss": 1e-3},
        },
        "contenders": [
            {
                "name": n,
                "short": s,
                "label": s + " label",
                "device": d,
                "available": r is None,
                "reason": r,
            }
            for n, s, d, r in cs
        ],
        "model_contenders": ["cpu-eager", "tpu-debug", "tpu-fused"],
        "op_contenders": ["cpu-eager", "tpu-debug", "tpu-fused"],
        "limits": {
            "stream_triad": {
                "label": "STREAM triad",
                "unit": "GB/s",
                "method": "C",
                "status": "ok",
                "value": summary(39.0),
            },
            "bf16_dot_peak": {
                "label": "bf16 peak",
                "unit": "GFLOP/s",
                "method": "C",
                "status": "n/a",
                "reason": "CPU lacks AVX-512 BF16",
            },
        },
        "ops": [
            {
                "group": "gemm",
                "name": "mm fp32",
                "shape": "1024x1024x1024",
                "dtype": "float32",
                "flops": 2e9,
                "bytes": 12e6,
                "ops_per_call": 1,
                "results": {
                    "cpu-eager": ok(0.02, gflops=100.0, gbs=0.6, roofline_fraction=0.45),
                    "tpu-debug": ok(0.04, gflops=50.0, gbs=0.3, roofline_fraction=0.22),
                    "tpu-fused": {"status": "n/a", "reason": "eager mode 'fused' not implemented"},
                },
            }
        ],
        "models": [
            {
                "model": "gpt-tiny",
                "task": "train",
                "results": {
                    "cpu-eager": ok(0.02, live_peak_bytes=14 << 20, rss_peak_bytes=300 << 20),
                    "tpu-debug": {
                        "status": "wrong",
                        "reason": "result differs from reference: loss 3",
                    },
                    "tpu-fused": {"status": "n/a", "reason": "eager mode 'fused' not implemented"},
                },
            }
        ],
        "notes": ["a note"],
        "timesplit": {
            "model": "gpt-small",
            "step_s": 1.0,
            "seconds": {
                "GEMM": 0.7,
                "attention": 0.1,
                "elementwise/normalization": 0.1,
                "optimizer": 0.05,
                "rest": 0.05,
            },
            "fraction": {
                "GEMM": 0.7,
                "attention": 0.1,
                "elementwise/normalization": 0.1,
                "optimizer": 0.05,
                "rest": 0.05,
            },
            "device": {
                "model": "gpt-tiny",
                "steps": 20,
                "kernel_s": {
                    "GEMM": 0.006,
                    "attention": 0.001,
                    "elementwise/normalization": 0.002,
                    "optimizer": 0.001,
                },
                "kernels_total_s": 0.01,
                "strict_step_s": 0.014,
                "fused_step_s": 0.012,
                "fused_forward_record_s": 0.0015,
            },
        },
    }


def test_valid_document_passes() -> None:
    assert validate(doc()) == []


def test_missing_and_mistyped_fields_are_reported() -> None:
    d = doc()
    del d["machine"]
    assert any("machine" in e for e in validate(d))
    d = doc()
    d["runtime_s"] = "fast"
    assert any("runtime_s" in e for e in validate(d))
    d = doc()
    del d["machine"]["git_sha"]
    assert validate(d) == ["machine.git_sha: missing"]


def test_outcome_rules() -> None:
    d = doc()
    d["models"][0]["results"]["tpu-fused"] = {"status": "n/a"}
    assert validate(d) == ["models[0].results.tpu-fused: n/a without a reason"]
    d = doc()
    d["models"][0]["results"]["tpu-debug"]["wall_s"] = summary(1.0)  # a figure on a wrong result
    assert validate(d) == ["models[0].results.tpu-debug: wrong must not carry wall_s"]
    d = doc()
    d["ops"][0]["results"]["cpu-eager"]["wall_s"]["min"] = 1.0  # min above the median
    assert validate(d) == ["ops[0].results.cpu-eager.wall_s: min <= median <= max does not hold"]
    d = doc()
    d["ops"][0]["results"]["tpu-debug"]["status"] = "fast"
    assert len(validate(d)) == 1
    d = doc()
    del d["ops"][0]["results"]["tpu-fused"]
    assert validate(d) == ["ops[0].results.tpu-fused: not an object"]


def test_unavailable_contender_needs_a_reason() -> None:
    d = doc()
    d["contenders"][2]["reason"] = None
    assert validate(d) == ["contenders[2]: unavailable without a reason"]
    d = doc()
    d["model_contenders"].append("ghost")
    assert "model_contenders: unknown contender 'ghost'" in validate(d)


def test_write_makes_stamped_and_latest_files(tmp_path: Path) -> None:
    path = write(doc(), tmp_path)
    assert path.name == "bench-quick-20260102T030405.json"
    assert (tmp_path / "latest-quick.json").read_text() == path.read_text()


def test_report_ratios_and_na() -> None:
    text = render(doc())
    assert "| gpt-tiny | train |" in text
    assert "20 ms" in text  # baseline median
    assert "0.50× (40 ms · 22%)" in text  # tpu debug op: CPU time / tpu time, roofline share
    # n/a and wrong cells carry a footnote, never a figure, and the reasons are listed.
    assert "wrong [" in text and "n/a [" in text
    assert "result differs from reference: loss 3" in text
    assert "eager mode 'fused' not implemented" in text
    assert "CPU lacks AVX-512 BF16" in text
    assert "live 14 MiB · RSS 300 MiB" in text
    assert "| GEMM " in text and "70%" in text
    # The device split: kernels by category, with the strict and fused steps beside them.
    assert "gpt-tiny train step on tpu" in text
    assert "| GEMM                      |     6 ms |   60% |" in text
    assert "fused step 12 ms, of which 1.5 ms Python recording the forward" in text


def test_report_is_deterministic_and_leaves_doc_alone() -> None:
    d = doc()
    before = copy.deepcopy(d)
    assert render(d) == render(d)
    assert d == before


def test_parse_only() -> None:
    assert parse_only(None) == (SECTIONS, {})
    assert parse_only("models:gpt-tiny,models:lstm") == (
        ("models",),
        {"models": ["gpt-tiny", "lstm"]},
    )
    # ops need the limits for their roofline
    assert parse_only("ops:gemm") == (("limits", "ops"), {"ops": ["gemm"]})
    try:
        parse_only("bogus")
    except ValueError as e:
        assert "bogus" in str(e)
    else:
        raise AssertionError("unknown section accepted")


def test_device_split_on_the_device() -> None:
    # A real (short) run: every category is filled, the GEMMs are a real share, and the fused
    # step's forward recording is part of its step.
    import torch

    from bench.timesplit import DEVICE_CATEGORIES, device_split

    mode = torch.tpu.get_eager_mode()
    try:
        ds = device_split(warmup=1, steps=2)
    finally:
        torch.tpu.set_eager_mode(mode)
    assert set(ds["kernel_s"]) == set(DEVICE_CATEGORIES)
    assert all(v > 0 for v in ds["kernel_s"].values())
    assert ds["kernel_s"]["GEMM"] > 0.2 * ds["kernels_total_s"]
    assert 0 < ds["fused_forward_record_s"] < ds["fused_step_s"]


def pjrt_run(step: float, compiled: int = 0, loaded: int = 0) -> dict[str, Any]:
    r: dict[str, Any] = {
        "status": "ok",
        "first_s": step * 20,
        "step_s": [step, step * 1.1, step * 0.9],
        "median_s": step,
        "losses": [5.0, 4.9],
    }
    if compiled or loaded:
        r["first"] = {
            "executables_compiled": compiled,
            "executables_loaded": loaded,
            "executable_compile_us": compiled * 30_000,
            "executable_load_us": loaded * 2_000,
        }
        r["steady"] = {
            "executables_compiled": 0,
            "executables_loaded": 0,
            "executable_compile_us": 0,
            "executable_load_us": 0,
            "executable_runs": 30,
            "executable_run_us": int(step * 3 * 0.5e6),
        }
        r["peak_bytes"] = 12 << 20
        r["driver_fallback"] = {"cumsum": 2} if compiled else {}
    return r


def test_pjrt_section_validates_and_renders() -> None:
    from bench.fmt import Footnotes
    from bench.pjrt import table

    results = {
        "cpu-eager": pjrt_run(0.03),
        "host-strict": pjrt_run(0.04),
        "pjrt-strict": pjrt_run(0.2, compiled=100),
        "pjrt-fused": pjrt_run(0.1, compiled=12),
        "pjrt-fused-warm": pjrt_run(0.1, loaded=12),
        "host-fused": {"status": "wrong", "reason": "step 1: loss 5.1, CPU eager 4.9"},
    }
    section = {
        "rows": [
            {
                "model": "gpt-tiny",
                "task": "train",
                "warmup": 2,
                "timed": 3,
                "results": results,
                "gemm_floor": {"status": "ok", "seconds": 0.16},
            }
        ]
    }
    d = doc()
    d["pjrt"] = section
    assert validate(d) == []
    fn = Footnotes()
    text = table(section, fn)
    assert "| pjrt-fused " in text and "2.00×" in text  # fused vs strict: 0.2 / 0.1
    assert "12 loaded in 24 ms" in text and "100 in 3 s" in text
    assert "GEMM floor: 160 ms; pjrt-strict's step over it: 1.25×" in text
    assert (
        "cumsum 2" in text
        and "wrong [1]" in text
        and fn.reasons == [results["host-fused"]["reason"]]
    )
    assert "PJRT driver" in render(d)
    broken = copy.deepcopy(d)
    del broken["pjrt"]["rows"][0]["results"]["pjrt-strict"]["median_s"]
    broken["pjrt"]["rows"][0]["results"]["host-fused"]["reason"] = ""
    errs = validate(broken)
    assert any("pjrt-strict.median_s" in e for e in errs) and any(
        "without a reason" in e for e in errs
    )


def test_compile_section_validates_and_renders() -> None:
    cold = {"first_s": 10.0, "steady_s": 2.0, "compile_s": 8.0}
    warm = {"first_s": 4.0, "steady_s": 2.0, "compile_s": 2.0}
    precompiled = {"first_s": 2.4, "steady_s": 2.0, "compile_s": 0.4}
    d = doc()
    d["compile"] = {
        "status": "ok",
        "model": "gpt-small",
        "cold": cold,
        "warm": warm,
        "warm_vs_cold": 0.25,
        "precompile": {"cold": cold, "warm": precompiled, "warm_vs_cold": 0.05},
    }
    assert validate(d) == []
    text = render(d)
    assert "compile time of gpt-small train" in text
    rows = [line.replace(" ", "") for line in text.splitlines() if line.startswith("|")]
    assert "|traces|warm|4s|2s|2s|25%(0.25×)|" in rows
    assert "|precompile|warm|2.4s|2s|400ms|5%(0.05×)|" in rows
    older = copy.deepcopy(d)
    del older["compile"]["precompile"]  # runs before the precompile pair was measured
    assert validate(older) == []
    older["compile"]["precompile"] = {"cold": cold}
    assert validate(older) == ["compile.precompile.warm: missing"]
    broken = copy.deepcopy(d)
    del broken["compile"]["warm"]["compile_s"]
    assert validate(broken) == ["compile.warm.compile_s: missing or not a number"]
    broken["compile"] = {"status": "n/a"}
    assert validate(broken) == ["compile: n/a without a reason"]
