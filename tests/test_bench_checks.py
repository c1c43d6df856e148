"""bench's result checks: tolerances, series comparison, and the timing loop's handling of
failing and wrong contenders (fake runners, nothing is timed for real)."""

import math
import sys
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parents[1]))
from bench.checks import Check, check_series, check_tensor, norm_atol, tensor_error  # noqa: E402
from bench.timing import NA, OK, WRONG, interleave, rounds_for  # noqa: E402


def test_tensor_error_is_normwise_relative() -> None:
    ref = torch.tensor([3.0, 4.0])
    assert tensor_error(ref, ref) == 0.0
    assert math.isclose(tensor_error(torch.tensor([3.0, 4.5]), ref), 0.1, rel_tol=1e-6)
    assert tensor_error(torch.tensor([float("nan"), 4.0]), ref) == math.inf


def test_check_tensor_tolerance_per_dtype() -> None:
    ref = torch.ones(1000)
    assert check_tensor(ref + 1e-7, ref).ok  # fp32: 1e-5
    assert not check_tensor(ref + 1e-3, ref).ok
    bref = ref.bfloat16()
    assert check_tensor(bref * 1.004, bref).ok  # bf16: 1e-2
    assert not check_tensor(bref * 1.05, bref).ok


def test_check_tensor_shape_and_dtype() -> None:
    assert "shape" in check_tensor(torch.ones(2, 3), torch.ones(3, 2)).detail
    assert "dtype" in check_tensor(torch.ones(2), torch.ones(2, dtype=torch.float64)).detail


def test_check_series_atol_and_norm_slack() -> None:
    # A bias that starts at zero: its norm after a few AdamW steps is pure noise direction.
    assert not check_series([0.0177], [0.0180], 1e-3, "param norm").ok
    slack = norm_atol(lr=1e-3, steps=8, numel=32)
    assert math.isclose(slack, 0.05 * 1e-3 * 8 * math.sqrt(32))
    assert check_series([0.0177], [0.0180], 1e-3, "param norm", [slack]).ok
    # A skipped update moves the norm by about lr * steps * sqrt(numel): far beyond the slack.
    assert not check_series([0.0], [1e-3 * 8 * math.sqrt(32)], 1e-3, "param norm", [slack]).ok


def test_check_series() -> None:
    assert check_series([1.0, 2.0], [1.0, 2.0001], 1e-3, "loss").ok
    bad = check_series([1.0, 2.1], [1.0, 2.0], 1e-3, "loss")
    assert not bad.ok and "loss 1" in bad.detail
    assert not check_series([1.0], [1.0, 2.0], 1e-3, "loss").ok
    assert not check_series([float("nan")], [1.0], 1e-3, "loss").ok


class Fake:
    """A runner whose value is its step index times `scale`; `fail_at` raises like a missing op."""

    def __init__(self, scale: float = 1.0, fail_at: int | None = None) -> None:
        self.scale, self.fail_at, self.calls, self.v = scale, fail_at, [], 0.0

    def enter(self) -> None:
        pass

    def run(self, i: int) -> None:
        if i == self.fail_at:
            raise NotImplementedError("aten::frobnicate not implemented for 'tpu'")
        self.calls.append(i)
        self.v = i * self.scale

    def value(self) -> object:
        return self.v


def same_as_ref(values: dict[str, list[object]], final: bool) -> dict[str, Check]:
    ref = [float(v) for v in values["ref"]]  # type: ignore[arg-type]
    return {n: check_series([float(x) for x in v], ref, 1e-6, "value") for n, v in values.items()}  # type: ignore[arg-type]


def test_interleave_ok_na_and_wrong() -> None:
    runners = {"ref": Fake(), "good": Fake(), "broken": Fake(fail_at=0), "wrong": Fake(scale=2.0)}
    out = interleave(runners, warmup=2, reps=3, check=same_as_ref)  # type: ignore[arg-type]
    assert list(out) == list(runners)  # order kept, nothing dropped
    assert out["ref"].status == OK and out["good"].status == OK
    assert out["good"].wall is not None and out["good"].wall.n == 3
    assert out["broken"].status == NA and "NotImplementedError" in out["broken"].reason
    assert out["wrong"].status == WRONG and out["wrong"].wall is None
    assert runners["wrong"].calls == [0, 1]  # wrong after the warm-up: never timed
    assert runners["good"].calls == [0, 1, 2, 3, 4]


def test_interleave_catches_wrong_timed_values() -> None:
    class LateBug(Fake):
        def run(self, i: int) -> None:
            super().run(i)
            if i >= 3:
                self.v += 1.0

    out = interleave({"ref": Fake(), "late": LateBug()}, 2, 3, same_as_ref)  # type: ignore[arg-type]
    assert out["late"].status == WRONG


def test_rounds_for_scales_fast_calls() -> None:
    assert rounds_for([1.0], 5, 0.2, 50) == 5  # slow calls: the minimum
    assert rounds_for([0.01], 5, 0.2, 50) == 20
    assert rounds_for([1e-6], 5, 0.2, 50) == 50  # capped
    assert rounds_for([], 5, 0.2, 50) == 5
