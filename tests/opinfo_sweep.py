"""PyTorch's OpInfo database run on tpu against CPU: which ops match and which run natively.

Each OpInfo of ``op_db`` that CPU supports for the dtype runs its first samples on CPU and on tpu
(inputs copied over); an op *matches* when every sample's outputs agree with CPU's (values, dtype,
shape, and the error when CPU raises one), and runs *natively* when no sample called the CPU
fallback or, on the PJRT driver, the driver fallback. Random ops (CPU disagrees with itself under
one seed) are held to dtype and shape only.

    python -m tests.opinfo_sweep [--dtype float32] [--samples 2] [--mode strict] [--json out.json]

prints one line per op that does not both match and run natively, then the summary lines. The
driver is the process's (``TORCH_TPU_DRIVER``). tests/test_opinfo_sweep.py holds the result to the
targets and to the list of ops expected to fall back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

import torch_tpu

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

# Tolerances by dtype, wider than assert_close's defaults: tpu kernels may sum in another order.
TOLERANCES = {torch.float32: (1.3e-4, 1e-5), torch.bfloat16: (1.6e-2, 1e-3)}


@dataclass
class OpResult:
    name: str
    samples: int = 0
    match: bool = True
    native: bool = True
    fallbacks: list[str] = field(default_factory=list)
    problem: str = ""


def op_key(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.device.type == "tpu":
        moved = value.detach().cpu()
        return moved.requires_grad_(value.requires_grad) if value.is_leaf else moved
    if isinstance(value, torch.device) and value.type == "tpu":
        return torch.device("cpu")
    if isinstance(value, str) and value.startswith("tpu"):
        return "cpu"
    return value


def _arguments(sample: Any, device: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The sample's arguments, made on tpu; for CPU, fresh host copies of them."""
    args, kwargs = (sample.input, *sample.args), dict(sample.kwargs)
    if device == "cpu":
        return tree_map(_to_cpu, args), tree_map(_to_cpu, kwargs)
    return args, kwargs


def _run(op: Any, arguments: tuple[tuple[Any, ...], dict[str, Any]], seed: int) -> Any:
    torch.manual_seed(seed)
    return op(*arguments[0], **arguments[1])


def _tensors(value: Any) -> list[Any]:
    leaves, _ = tree_flatten(value)
    return leaves


def _same(expected: Any, actual: Any, dtype: torch.dtype, exact: bool) -> str:
    """An empty string when ``actual`` (from tpu) agrees with ``expected`` (from CPU)."""
    want, got = _tensors(expected), _tensors(actual)
    if len(want) != len(got):
        return f"{len(got)} outputs, CPU gives {len(want)}"
    rtol, atol = TOLERANCES[dtype]
    for w, g in zip(want, got, strict=True):
        if not isinstance(w, torch.Tensor):
            if isinstance(g, torch.Tensor) or (w != g and not (w != w and g != g)):
                return f"output {g!r}, CPU gives {w!r}"
            continue
        if not isinstance(g, torch.Tensor):
            return f"output {type(g).__name__}, CPU gives a tensor"
        if g.device.type != "tpu" and w.device.type == "cpu":
            return f"output on {g.device}"
        if (g.dtype, g.shape) != (w.dtype, w.shape):
            return f"output {g.dtype}{list(g.shape)}, CPU gives {w.dtype}{list(w.shape)}"
        if exact:
            continue
        try:
            torch.testing.assert_close(
                g.detach().cpu(), w.detach(), rtol=rtol, atol=atol, equal_nan=True
            )
        except AssertionError as error:
            return str(error).splitlines()[0]
    return ""


def _is_random(op: Any, sample: Any) -> bool:
    try:
        first = _run(op, _arguments(sample, "cpu"), 1)
        second = _run(op, _arguments(sample, "cpu"), 2)
    except Exception:  # noqa: BLE001 - CPU's own failure is judged by the caller
        return False
    return _same(first, second, torch.float32, exact=False) != ""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _fallback_calls() -> dict[str, int]:
    stats = torch_tpu.tpu.op_stats()
    calls = dict(stats["fallback"])
    for name, count in stats["driver_fallback"].items():
        calls[f"driver:{name}"] = count
    return calls


def run_op(op: Any, dtype: torch.dtype, samples: int, seed: int = 0) -> OpResult | None:
    """One OpInfo on CPU and tpu; None when CPU does not support the dtype or has no samples.

    The samples are made on tpu from ``seed`` and the op's name, and copied to CPU, as PyTorch's
    own CPU comparison (test_ops.py's test_compare_cpu) does for CUDA.
    """
    result = OpResult(op_key(op))
    if dtype not in op.supported_dtypes("cpu"):
        return None
    with _quiet():
        torch.manual_seed(zlib.crc32(f"{seed}:{result.name}".encode()))
        try:
            inputs = list(op.sample_inputs("tpu", dtype, requires_grad=False))[:samples]
        except Exception as error:  # noqa: BLE001 - tpu cannot hold the op's inputs
            result.match = result.native = False
            result.problem = f"samples not made on tpu: {type(error).__name__}: {error}"[:160]
            return result
        for index, sample in enumerate(inputs):
            seed = 1234 + index
            exact = _is_random(op, sample)
            try:
                expected = _run(op, _arguments(sample, "cpu"), seed)
                cpu_error = None
            except Exception as error:  # noqa: BLE001 - compared with tpu's below
                expected, cpu_error = None, error
            torch_tpu.tpu.reset_op_stats()
            try:
                actual = _run(op, _arguments(sample, "tpu"), seed)
                for leaf in _tensors(actual):
                    if isinstance(leaf, torch.Tensor) and leaf.device.type == "tpu":
                        leaf.cpu()
                problem = "" if cpu_error is None else "CPU raises, tpu does not"
            except Exception as error:  # noqa: BLE001 - every failure is a finding
                actual = None
                if cpu_error is not None:
                    problem = ""
                else:
                    problem = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
            calls = _fallback_calls()
            torch.tpu.synchronize()
            result.samples += 1
            if calls:
                result.native = False
                result.fallbacks = sorted(set(result.fallbacks) | set(calls))
            if not problem and cpu_error is None:
                problem = _same(expected, actual, dtype, exact)
            if problem and result.match:
                result.match, result.problem = False, f"sample {index}: {problem}"
    return result if result.samples else None


def sweep(
    dtype: torch.dtype, samples: int, names: set[str] | None = None, seed: int = 0
) -> list[OpResult]:
    """Every OpInfo (or those named) for one dtype, in op_db's order."""
    from torch.testing._internal.common_methods_invocations import op_db

    results = []
    for op in op_db:
        if names is not None and op_key(op) not in names:
            continue
        result = run_op(op, dtype, samples, seed)
        if result is not None:
            results.append(result)
    return results


def summary(results: list[OpResult], label: str) -> list[str]:
    total = len(results)
    matched = sum(r.match for r in results)
    native = sum(r.native for r in results)
    return [
        f"opinfo {label}: {total} ops, {matched} match ({100 * matched / total:.1f}%), "
        f"{native} native ({100 * native / total:.1f}%)"
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--mode", choices=["strict", "debug", "fused"], default="strict")
    parser.add_argument("--op", action="append", help="only these OpInfos (repeatable)")
    parser.add_argument("--json", help="write every op's result here")
    args = parser.parse_args(argv)
    torch_tpu.tpu.set_eager_mode(args.mode)
    results = sweep(DTYPES[args.dtype], args.samples, set(args.op) if args.op else None)
    for r in results:
        if not (r.match and r.native):
            state = ("" if r.match else "MISMATCH ") + ("" if r.native else "FALLBACK ")
            print(f"{r.name:40s} {state}{r.problem} {' '.join(r.fallbacks)}".rstrip())
    driver = torch_tpu.tpu.get_device_properties().driver
    for line in summary(results, f"{args.dtype} {args.mode} {driver}"):
        print(line)
    if args.json:
        with open(args.json, "w") as out:
            json.dump([asdict(r) for r in results], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
