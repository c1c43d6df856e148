"""Debug mode's extras: the per-op NaN/Inf check (TORCH_TPU_CHECK_NAN), the op trace
(TORCH_TPU_OP_TRACE), bounds checks of the index ops, and errors raised at the op's Python line."""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Iterator

import pytest
import torch
from _subprocess_helpers import check_python

DEV = "tpu"


@pytest.fixture
def debug() -> Iterator[None]:
    """Debug mode with the NaN check on; both restored after the test."""
    torch.tpu.set_eager_mode("debug")
    try:
        with torch.tpu.debug_nan_check():
            yield
    finally:
        torch.tpu.set_eager_mode("strict")


def nan_error(op: str, value: str, dtype: str, shape: str, index: str) -> str:
    """The start of the check's message, as a regex."""
    return re.escape(
        f"tpu op '{op}' produced {value} in output 0 ({dtype}, shape {shape}) at index {index}"
    )


# ---------------------------------------------------------------------------------------------
# The NaN/Inf check


def test_nan_check_api() -> None:
    assert not torch.tpu.get_debug_nan_check()
    with torch.tpu.debug_nan_check():
        assert torch.tpu.get_debug_nan_check()
        with torch.tpu.debug_nan_check(False):
            assert not torch.tpu.get_debug_nan_check()
        assert torch.tpu.get_debug_nan_check()
    assert not torch.tpu.get_debug_nan_check()
    names = {v.name: v for v in torch.tpu.env_vars()}
    assert names["TORCH_TPU_CHECK_NAN"].default == "0"
    assert names["TORCH_TPU_CHECK_NAN"].stage == "stable"
    assert names["TORCH_TPU_OP_TRACE"].stage == "stable"


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda x: x / (x * 0), nan_error("div", "inf", "float32", "[3]", "[0]")),
        (lambda x: torch.log(x - 2), nan_error("log", "NaN", "float32", "[3]", "[0]")),
        (lambda x: x.half() * 30000, nan_error("mul", "inf", "float16", "[3]", "[1]")),
        (lambda x: x.bfloat16() * 1e38, nan_error("mul", "inf", "bfloat16", "[3]", "[2]")),
        (lambda x: x.double().sqrt() - x.double().neg().sqrt(), "'sqrt' produced NaN"),
    ],
    ids=["div_by_zero", "log_of_negative", "float16_overflow", "bfloat16_overflow", "sqrt"],
)
def test_first_op_making_nan_or_inf_raises(
    debug: None, make: Callable[[torch.Tensor], torch.Tensor], error: str
) -> None:
    x = torch.tensor([1.0, 3.0, 5.0], device=DEV)
    with pytest.raises(RuntimeError, match=error) as info:
        make(x)
    assert "from finite inputs" in str(info.value)


def test_non_contiguous_outputs_report_the_logical_index(debug: None) -> None:
    num = torch.ones(3, 4, device=DEV).t()  # [4, 3], column-major
    den = torch.ones(4, 3)
    den[1, 2] = 0
    den = den.to(DEV)
    with pytest.raises(RuntimeError, match=nan_error("div", "inf", "float32", "[4, 3]", "[1, 2]")):
        num / den
    # out= a strided view: only the view's elements are scanned.
    base = torch.zeros(4, 6, device=DEV)
    out = base[:, ::2]
    with pytest.raises(RuntimeError, match=nan_error("div", "inf", "float32", "[4, 3]", "[1, 2]")):
        torch.div(num.contiguous(), den, out=out)
    with torch.tpu.debug_nan_check(False):
        base[:, 1::2] = float("nan")  # between the view's elements
    torch.div(num.contiguous(), torch.ones(4, 3, device=DEV), out=out)
    assert torch.equal(out.cpu(), torch.ones(4, 3))


def test_ops_passing_nan_on_are_not_blamed(debug: None) -> None:
    with torch.tpu.debug_nan_check(False):
        bad = torch.zeros(4, device=DEV) / 0  # NaN made while the check is off
    y = bad * 2 + 1  # passed on, not made here
    bad.mul_(3)  # in place: its input held the NaN before the op ran
    total = y.sum()
    assert total.isnan().item()
    # A CPU tensor or Python scalar holding -inf is a new value for the device.
    with pytest.raises(RuntimeError, match="from a non-finite value on the host"):
        torch.ones(2, 2, device=DEV).masked_fill(
            torch.eye(2, dtype=torch.bool, device=DEV), float("-inf")
        )
    with pytest.raises(RuntimeError, match="'copy' produced NaN"):
        torch.tensor([1.0, float("nan")]).to(DEV)
    with pytest.raises(RuntimeError, match="'fill' produced inf .* given by the host"):
        torch.full((2,), float("inf"), device=DEV)
    lowest = torch.finfo(torch.float32).min  # the finite way to mask
    torch.ones(2, device=DEV).masked_fill(torch.ones(2, dtype=torch.bool, device=DEV), lowest)


def test_fallback_results_are_checked_when_copied_in(debug: None) -> None:
    big = torch.eye(2, device=DEV) * 100
    with (
        pytest.warns(UserWarning, match="no native kernel"),
        pytest.raises(RuntimeError, match="'copy' produced inf .* on the host"),
    ):
        torch.linalg.matrix_exp(big)  # runs on the CPU (e^100 overflows float32); copied in


def test_output_stays_readable_and_process_usable(debug: None) -> None:
    x = torch.tensor([1.0, 0.0, -1.0], device=DEV)
    with pytest.raises(RuntimeError, match=nan_error("div", "inf", "float32", "[3]", "[0]")):
        x.div_(0)
    # The op ran; its output holds what it computed (not poisoned), and later ops work.
    assert x.isnan().tolist() == [False, True, False]
    assert (torch.ones(3, device=DEV) + 1).tolist() == [2.0, 2.0, 2.0]
    torch.tpu.synchronize()


def test_backward_ops_are_checked(debug: None) -> None:
    x = torch.zeros(3, device=DEV, requires_grad=True)
    y = x.sqrt().sum()  # sqrt(0) is finite; its gradient is not
    with pytest.raises(RuntimeError, match="produced inf"):
        y.backward()


@pytest.mark.filterwarnings("ignore:the NaN/Inf check and the op trace")
@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_check_does_nothing_outside_debug_mode(mode: str) -> None:
    torch.tpu.set_eager_mode(mode)
    try:
        with torch.tpu.debug_nan_check():
            y = torch.ones(3, device=DEV) / 0
            torch.tpu.synchronize()
        assert y.isinf().all().item()
    finally:
        torch.tpu.set_eager_mode("strict")


def test_check_off_does_nothing() -> None:
    torch.tpu.set_eager_mode("debug")
    try:
        assert (torch.ones(3, device=DEV) / 0).isinf().all().item()
    finally:
        torch.tpu.set_eager_mode("strict")


def test_env_var_and_the_strict_mode_warning() -> None:
    code = """
        import warnings
        import torch
        assert torch.tpu.get_debug_nan_check()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = torch.ones(2, device="tpu") / 0  # strict: not checked, one warning
            y = y / 0
        print("warnings:", sum("apply in debug mode only" in str(w.message) for w in caught))
        torch.tpu.set_eager_mode("debug")
        try:
            torch.ones(2, device="tpu") / 0
        except RuntimeError as e:
            print("raised:", e)
    """
    out = check_python(code, env={"TORCH_TPU_CHECK_NAN": "1"}).stdout
    assert "warnings: 1" in out
    assert "raised: tpu op 'div' produced inf in output 0" in out


# ---------------------------------------------------------------------------------------------
# The op trace

TRACE_LINE = re.compile(r"^tpu_op_trace op=(\w+) in=(\S*) out=(\S*) us=[0-9.]+ status=(ok|error)$")


def test_trace_env_var_prints_one_line_per_op() -> None:
    code = """
        import torch
        a = torch.ones(2, 3, device="tpu")
        b = (a + 1).exp()
        print(b.sum().item())
    """
    result = check_python(code, env={"TORCH_TPU_OP_TRACE": "1", "TORCH_TPU_EAGER_MODE": "debug"})
    lines = [line for line in result.stderr.splitlines() if line.startswith("tpu_op_trace")]
    parsed = [TRACE_LINE.match(line) for line in lines]
    assert all(parsed), lines
    ops = [m.group(1) for m in parsed if m]
    assert ops[:3] == ["fill", "add", "exp"], ops
    assert "sum" in ops and ops[-1] == "copy"  # .item() reads the result back
    add = next(m for m in parsed if m and m.group(1) == "add")
    assert add.group(3) == "float32[2,3]" and add.group(2).startswith("float32[2,3],")


def test_trace_switch_prints_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    torch.tpu.set_eager_mode("debug")
    torch.tpu.set_debug_op_trace(True)
    try:
        assert torch.tpu.get_debug_op_trace()
        torch.ones(4, device=DEV).neg()
    finally:
        torch.tpu.set_debug_op_trace(False)
        torch.tpu.set_eager_mode("strict")
    torch.ones(4, device=DEV).neg()  # not traced any more
    torch.tpu.synchronize()
    lines = [x for x in capfd.readouterr().err.splitlines() if x.startswith("tpu_op_trace")]
    assert [TRACE_LINE.match(x).group(1) for x in lines] == ["fill", "neg"]  # type: ignore[union-attr]


def test_trace_collects_entries() -> None:
    torch.tpu.set_eager_mode("debug")
    try:
        with torch.tpu.debug_op_trace() as outer:
            x = torch.arange(6.0).view(2, 3).to(DEV)
            with torch.tpu.debug_op_trace() as inner:
                y = x.t().to(torch.bfloat16)
                assert inner == []  # filled on exit
            y.float().cpu()
    finally:
        torch.tpu.set_eager_mode("strict")
    assert [e.op for e in inner] == ["copy"]
    assert [e.op for e in outer] == ["copy", "copy", "copy", "copy"]
    upload, cast = outer[0], outer[1]
    assert upload.inputs == [torch.tpu.TensorInfo(torch.float32, (2, 3), True)]
    assert upload.outputs == [torch.tpu.TensorInfo(torch.float32, (2, 3), False)]
    assert cast.inputs[0].shape == (3, 2) and cast.outputs[0].dtype == torch.bfloat16
    assert all(e.ok and e.time_us >= 0 and TRACE_LINE.match(e.line) for e in outer)
    assert outer[3].outputs[0].host  # the read back


@pytest.mark.filterwarnings("ignore:the NaN/Inf check and the op trace")
def test_trace_records_failed_ops_and_nothing_outside_debug_mode() -> None:
    src = torch.arange(4.0, device=DEV)
    bad = torch.tensor([7], device=DEV)
    with torch.tpu.debug_op_trace() as strict_trace:
        torch.index_select(src, 0, bad)
        with pytest.raises(RuntimeError):
            torch.tpu.synchronize()
    assert strict_trace == []
    torch.tpu.set_eager_mode("debug")
    try:
        with torch.tpu.debug_op_trace() as trace, pytest.raises(IndexError):
            torch.index_select(src, 0, bad)
    finally:
        torch.tpu.set_eager_mode("strict")
    assert [(e.op, e.ok) for e in trace] == [("index_select", False)]
    assert trace[0].line.endswith("status=error")


# ---------------------------------------------------------------------------------------------
# Bounds checks of the index ops, raised at the op's Python line


# Each op gets src (3x4 float), an index with 5 (out of range for dim 1) and a 2-d one with 9.
IndexOp = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], object]
INDEX_OPS: dict[str, IndexOp] = {
    "index_select": lambda src, bad, bad2d: src.index_select(1, bad),
    "gather": lambda src, bad, bad2d: src.gather(1, bad2d),
    "scatter_": lambda src, bad, bad2d: src.clone().scatter_(1, bad2d, 1.0),
    "scatter_add_": lambda src, bad, bad2d: src.clone().scatter_add_(1, bad2d, src[:1, :2]),
    "index_add_": lambda src, bad, bad2d: src.clone().index_add_(1, bad, src[:, :2]),
    "index_copy_": lambda src, bad, bad2d: src.clone().index_copy_(1, bad, src[:, :2]),
    "index_fill_": lambda src, bad, bad2d: src.clone().index_fill_(1, bad, 0.0),
    "index": lambda src, bad, bad2d: src[:, bad],
    "index_put_": lambda src, bad, bad2d: src.clone().index_put_((bad,), src.new_tensor(1.0)),
    "embedding": lambda src, bad, bad2d: torch.nn.functional.embedding(bad, src),
}


@pytest.mark.parametrize("name", INDEX_OPS)
def test_index_ops_raise_index_error_at_the_op(name: str) -> None:
    src = torch.arange(12.0, device=DEV).view(3, 4)
    bad = torch.tensor([0, 5], device=DEV)
    bad2d = torch.tensor([[0, 9]], device=DEV)
    torch.tpu.set_eager_mode("debug")
    try:
        torch.tpu.reset_op_stats()
        with pytest.raises(IndexError):
            INDEX_OPS[name](src, bad, bad2d)
        assert torch.tpu.fallback_stats() == {}
    finally:
        torch.tpu.set_eager_mode("strict")
    torch.tpu.synchronize()


def _failing_frame(error: BaseException) -> traceback.FrameSummary:
    """The innermost Python frame of the error's traceback: where the op was called."""
    return traceback.extract_tb(error.__traceback__)[-1]


def test_errors_point_at_the_op_line() -> None:
    src = torch.arange(5.0, device=DEV)
    bad = torch.tensor([9], device=DEV)
    ones = torch.ones(2, device=DEV)

    def index_op() -> torch.Tensor:
        return torch.index_select(src, 0, bad)  # the op's line

    def nan_op() -> torch.Tensor:
        return ones / 0  # the op's line

    torch.tpu.set_eager_mode("debug")
    try:
        for fn, kind in ((index_op, IndexError), (nan_op, RuntimeError)):
            with torch.tpu.debug_nan_check(), pytest.raises(kind) as info:
                fn()
            frame = _failing_frame(info.value)
            assert frame.filename == __file__ and frame.name == fn.__name__
            assert frame.lineno == fn.__code__.co_firstlineno + 1
    finally:
        torch.tpu.set_eager_mode("strict")
    # Strict mode, for contrast: the op returns, the next synchronization raises.
    out = index_op()
    with pytest.raises(RuntimeError, match="index_select") as info:
        torch.tpu.synchronize()
    assert _failing_frame(info.value).name != "index_op"
    del out
    torch.tpu.synchronize()
