"""Regression tests for the differences from CPU that the differential fuzzer (tests/fuzz/) found,
one small program per class, run on CPU and on tpu in every eager mode: the same exception type
where CPU raises, else the same values, dtype, shape and strides. tests/fuzz/known.py lists the
differences kept on purpose (where tpu does as CUDA)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

Program = Callable[[str], torch.Tensor]


def _mm_dtypes(d: str) -> torch.Tensor:
    return torch.mm(torch.ones(2, 0, device=d), torch.ones(0, 3, dtype=torch.float64, device=d))


def _addmm_empty_sum(d: str) -> torch.Tensor:
    c = torch.arange(6.0, device=d).view(2, 3)
    return torch.addmm(c, torch.ones(2, 0, device=d), torch.ones(0, 3, device=d), beta=2)


def _addmm_int_beta(d: str) -> torch.Tensor:
    c = torch.ones(2, 3, dtype=torch.int64, device=d)
    a = torch.ones(2, 0, dtype=torch.int64, device=d)
    return torch.addmm(c, a, torch.ones(0, 3, dtype=torch.int64, device=d), beta=0.5)


def _bmm_bool_empty(d: str) -> torch.Tensor:
    a = torch.ones(2, 3, 0, dtype=torch.bool, device=d)
    return torch.bmm(a, torch.ones(2, 0, 4, dtype=torch.bool, device=d))


def _addmv_empty(d: str) -> torch.Tensor:
    v = torch.arange(3.0, device=d)
    return torch.addmv(v, torch.ones(3, 0, device=d), torch.ones(0, device=d), beta=3)


def _addbmm_out_resize(d: str) -> torch.Tensor:
    out = torch.empty(0, device=d)
    b1, b2 = torch.ones(2, 3, 4, device=d), torch.ones(2, 4, 5, device=d)
    return torch.addbmm(torch.ones(5, device=d), b1, b2, out=out)


def _mean_int_out(d: str) -> torch.Tensor:
    x = torch.arange(4.0, device=d)
    return torch.mean(x, 0, out=torch.empty((), dtype=torch.int64, device=d))


def _var_narrower_out(d: str) -> torch.Tensor:
    x = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64, device=d)
    return torch.var(x, 0, out=torch.empty(0, device=d))


def _var_int_out(d: str) -> torch.Tensor:
    x = torch.tensor([1.0, 2.0, 4.0], device=d)
    return torch.var(x, 0, out=torch.empty(0, dtype=torch.int32, device=d))


def _var_complex(d: str) -> torch.Tensor:
    return torch.var(torch.tensor([1 + 1j, 2 - 3j, 4 + 0j], device=d), 0)


def _var_real_into_complex_out(d: str) -> torch.Tensor:
    x = torch.zeros(2, 3, dtype=torch.float64, device=d)
    return torch.std(x, 0, out=torch.empty(0, dtype=torch.complex64, device=d))


def _index_add_bool_alpha(d: str) -> torch.Tensor:
    x = torch.zeros(3, dtype=torch.bool, device=d)
    src = torch.ones(2, dtype=torch.bool, device=d)
    return x.index_add(0, torch.tensor([0, 2], device=d), src, alpha=True)


def _index_add_empty_self(d: str) -> torch.Tensor:
    x = torch.zeros(0, 3, device=d)
    return x.index_add(0, torch.tensor([5], device=d), torch.ones(1, 3, device=d))


def _index_fill_negative(d: str) -> torch.Tensor:
    x = torch.arange(6.0, device=d).view(2, 3)
    return x.index_fill(1, torch.tensor([-1], device=d), 7.0)


def _index_fill_overflow(d: str) -> torch.Tensor:
    x = torch.zeros(0, dtype=torch.uint8, device=d)
    return x.index_fill(0, torch.tensor([], dtype=torch.int64, device=d), 300)


def _leaky_relu_uint8(d: str) -> torch.Tensor:
    return torch.nn.functional.leaky_relu(torch.ones(3, dtype=torch.uint8, device=d), 1e30)


def _fill_device_value_broadcast(d: str) -> torch.Tensor:
    x = torch.zeros(3, device=d)
    return x.fill_(torch.tensor(2.0, device=d).expand(1))


def _fill_device_value_overlap(d: str) -> torch.Tensor:
    x = torch.zeros(4, device=d).unsqueeze(1).expand(4, 5)
    return x.fill_(torch.tensor(2.0, device=d))


def _copy_partial_overlap(d: str) -> torch.Tensor:
    x = torch.arange(6.0, device=d)
    return x[1:4].copy_(x[0:3])


def _abs_complex_empty_bool_out(d: str) -> torch.Tensor:
    x = torch.empty(0, 2, dtype=torch.complex64, device=d)
    return torch.abs(x, out=torch.empty(0, 2, dtype=torch.bool, device=d))


def _masked_scatter_empty_source(d: str) -> torch.Tensor:
    x = torch.zeros(3, device=d)
    src = torch.empty(0, 3, device=d).t()  # empty, with strides no contiguous tensor has
    return x.masked_scatter_(torch.zeros(3, dtype=torch.bool, device=d), src)


def _logsumexp_complex_real_out(d: str) -> torch.Tensor:
    x = torch.tensor([1 + 2j, 3 - 1j], device=d)
    return torch.logsumexp(x, 0, out=torch.empty(0, device=d))


def _nan_to_num_complex_overlap(d: str) -> torch.Tensor:
    x = torch.zeros(1, dtype=torch.complex64, device=d).expand(4).unsqueeze(1)
    return x.nan_to_num_(neginf=1e30)


def _where_converted_layout(d: str) -> torch.Tensor:
    # where converts self to the result dtype first (on CUDA too): the dense copy of this
    # expanded float16 input decides the output's layout.
    a = torch.zeros(1, 3, 1, dtype=torch.float16, device=d).expand(1, 3, 4).permute(1, 2, 0)
    b = torch.arange(12.0, device=d).view(3, 4, 1)
    return torch.where(torch.tensor(False, device=d), a, b)


CASES: dict[str, Program] = {
    "mm-dtype-check-before-empty-shortcut": _mm_dtypes,
    "addmm-sum-over-nothing": _addmm_empty_sum,
    "addmm-int-beta-refused": _addmm_int_beta,
    "bmm-bool-empty": _bmm_bool_empty,
    "addmv-empty": _addmv_empty,
    "addbmm-out-resize": _addbmm_out_resize,
    "mean-int-out-refused": _mean_int_out,
    "var-narrower-out": _var_narrower_out,
    "var-int-out-refused": _var_int_out,
    "var-complex": _var_complex,
    "std-real-into-complex-out-refused": _var_real_into_complex_out,
    "index-add-bool-alpha": _index_add_bool_alpha,
    "index-add-empty-self": _index_add_empty_self,
    "index-fill-negative-index": _index_fill_negative,
    "index-fill-value-checked-first": _index_fill_overflow,
    "leaky-relu-uint8-not-implemented": _leaky_relu_uint8,
    "fill-device-value-broadcast-refused": _fill_device_value_broadcast,
    "fill-device-value-overlap-refused": _fill_device_value_overlap,
    "copy-partial-overlap-refused": _copy_partial_overlap,
    "abs-complex-empty-bool-out-refused": _abs_complex_empty_bool_out,
    "masked-scatter-empty-source": _masked_scatter_empty_source,
    "logsumexp-complex-real-out": _logsumexp_complex_real_out,
    "nan-to-num-complex-overlap-refused": _nan_to_num_complex_overlap,
    "where-converted-layout": _where_converted_layout,
}


def _run(fn: Program, device: str) -> torch.Tensor | BaseException:
    try:
        result = fn(device)
        if device == "tpu":
            torch.tpu.synchronize()
        return result
    except Exception as e:
        return e


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_matches_cpu(eager_mode: str, name: str) -> None:
    expected = _run(CASES[name], "cpu")
    actual = _run(CASES[name], "tpu")
    if isinstance(expected, BaseException):
        assert type(actual) is type(expected), f"cpu raises {expected!r}, tpu gives {actual!r}"
        return
    assert isinstance(actual, torch.Tensor), f"tpu raises {actual!r}"
    assert actual.device.type == "tpu"
    assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape)
    if expected.numel() > 0:
        assert actual.stride() == expected.stride()
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True)
    # The process stays usable after each case.
    assert torch.ones(2, device="tpu").add(1).cpu().tolist() == [2.0, 2.0]
