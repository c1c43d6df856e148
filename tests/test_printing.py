"""Printing tpu tensors: repr and str equal the CPU tensor's, except for the device suffix that
PyTorch adds for any non-CPU tensor (as it does for CUDA), for every dtype the device stores."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import torch
from _dtypes import STORED_DTYPES

DEV = "tpu"
DEVICE_SUFFIX = "device='tpu:0'"
SUFFIX_SPLIT = re.compile(r",\s+(?=(?:device|dtype|size|requires_grad|grad_fn|layout)=)")


def split_repr(text: str) -> tuple[str, list[str]]:
    """(data part, suffixes) of a tensor repr; the wrapping of suffixes is not compared."""
    assert text.endswith(")"), text
    parts = SUFFIX_SPLIT.split(text[:-1])
    return parts[0], parts[1:]


def assert_repr_matches(cpu: torch.Tensor, tpu: torch.Tensor) -> None:
    for fn in (repr, str):
        cpu_data, cpu_suffixes = split_repr(fn(cpu))
        tpu_data, tpu_suffixes = split_repr(fn(tpu))
        assert tpu_data == cpu_data, f"\ncpu: {fn(cpu)}\ntpu: {fn(tpu)}"
        assert tpu_suffixes == [DEVICE_SUFFIX, *cpu_suffixes], f"\ncpu: {fn(cpu)}\ntpu: {fn(tpu)}"


def values(dtype: torch.dtype, n: int = 12) -> torch.Tensor:
    base = torch.linspace(-3.5, 7.25, n, dtype=torch.float64)
    if dtype.is_complex:
        return torch.complex(base, base.flip(0) / 3).to(dtype)
    if dtype == torch.bool:
        return base > 0.5
    if dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64):
        return torch.arange(n, dtype=torch.int64).mul(37).to(dtype)
    if not dtype.is_floating_point:
        return base.mul(1000).to(torch.int64).to(dtype)
    return base.to(dtype)


@pytest.fixture
def print_options() -> Iterator[None]:
    """Restores the default print options after a test changes them."""
    try:
        yield
    finally:
        torch.set_printoptions(profile="default")


def test_split_repr_self_check() -> None:
    # The comparison must be able to fail.
    cpu = torch.tensor([1.5, 2.0])
    data, suffixes = split_repr("tensor([1.5000, 2.0000], device='tpu:0', requires_grad=True)")
    assert data == "tensor([1.5000, 2.0000]" and suffixes == [DEVICE_SUFFIX, "requires_grad=True"]
    with pytest.raises(AssertionError):
        assert_repr_matches(cpu, torch.tensor([1.5, 2.5]))


@pytest.mark.parametrize("dtype", STORED_DTYPES, ids=str)
def test_every_dtype(dtype: torch.dtype, eager_mode: str) -> None:
    cpu = values(dtype)
    assert_repr_matches(cpu, cpu.to(DEV))
    assert_repr_matches(cpu.reshape(3, 4), cpu.reshape(3, 4).to(DEV))


@pytest.mark.parametrize("dtype", STORED_DTYPES, ids=str)
def test_every_dtype_scalar_and_empty(dtype: torch.dtype) -> None:
    cpu = values(dtype)
    assert_repr_matches(cpu[3], cpu[3].to(DEV))
    empty = torch.empty(0, 4, dtype=dtype)
    assert_repr_matches(empty, empty.to(DEV))
    assert_repr_matches(cpu[:0], cpu.to(DEV)[:0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_nan_inf_and_signed_zero(dtype: torch.dtype) -> None:
    cpu = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1e-3, 65504.0]).to(
        dtype
    )
    assert_repr_matches(cpu, cpu.to(DEV))
    cplx = torch.tensor([complex(float("nan"), 1), complex(0, float("inf"))])
    assert_repr_matches(cplx, cplx.to(DEV))


@pytest.mark.parametrize(
    "data",
    [
        [1e-8, 1.0, 1e8],  # scientific notation
        [123456789.0, 1.0],
        [0.1, 0.25, 1 / 3],
        [1.0, 2.0, 3.0],  # integral floats
        [-1e-5, 2e-5],
    ],
)
def test_float_formatting_modes(data: list[float]) -> None:
    cpu = torch.tensor(data)
    assert_repr_matches(cpu, cpu.to(DEV))
    assert_repr_matches(cpu.double(), cpu.double().to(DEV))


SHAPES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "transposed": lambda t: t.reshape(4, 6).t(),
    "strided": lambda t: t.reshape(4, 6)[::2, 1::3],
    "expanded": lambda t: t[:6].expand(3, 6),
    "3d_permuted": lambda t: t.reshape(2, 3, 4).permute(2, 0, 1),
    "diagonal": lambda t: t.reshape(4, 6).diagonal(),
    "unsqueezed": lambda t: t[None, :5, None],
    "4d": lambda t: t.reshape(1, 2, 3, 4),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_views_and_shapes(name: str, eager_mode: str) -> None:
    cpu = torch.linspace(-2, 5, 24)
    view = SHAPES[name]
    assert_repr_matches(view(cpu), view(cpu.to(DEV)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16, torch.complex64])
def test_large_tensors_are_summarized(dtype: torch.dtype, eager_mode: str) -> None:
    cpu = torch.arange(3000).to(dtype)
    tpu = cpu.to(DEV)
    assert "..." in repr(tpu)
    assert_repr_matches(cpu, tpu)
    assert_repr_matches(cpu.reshape(30, 100), tpu.reshape(30, 100))
    assert_repr_matches(cpu.reshape(10, 300).t(), tpu.reshape(10, 300).t())


def test_print_options(print_options: None) -> None:
    cpu = torch.tensor([1 / 3, 2 / 3, 12345.678])
    tpu = cpu.to(DEV)
    torch.set_printoptions(precision=2)
    assert_repr_matches(cpu, tpu)
    torch.set_printoptions(sci_mode=True)
    assert_repr_matches(cpu, tpu)
    torch.set_printoptions(threshold=5, edgeitems=1)
    big = torch.arange(20.0)
    assert_repr_matches(big, big.to(DEV))
    torch.set_printoptions(linewidth=30)
    assert_repr_matches(big.reshape(4, 5), big.reshape(4, 5).to(DEV))


def test_requires_grad_and_grad_fn() -> None:
    cpu = torch.tensor([1.0, -2.0], requires_grad=True)
    tpu = cpu.detach().to(DEV).requires_grad_()
    assert_repr_matches(cpu, tpu)
    assert "requires_grad=True" in repr(tpu)
    assert_repr_matches(cpu * 2, tpu * 2)
    assert "grad_fn=<MulBackward0>" in repr(tpu * 2)
    assert_repr_matches(cpu.sum(), tpu.sum())


def test_print_waits_for_queued_work(capsys: pytest.CaptureFixture[str]) -> None:
    # In strict mode the fill is queued; printing must show its result.
    x = torch.empty(4, device=DEV)
    x.fill_(7.0)
    x[1:3].fill_(-1.0)
    print(x)
    assert capsys.readouterr().out == "tensor([ 7., -1., -1.,  7.], device='tpu:0')\n"


def test_other_string_forms() -> None:
    t = torch.arange(4.0, device=DEV)
    assert f"{t}" == str(t)
    assert format(t[1], ".3f") == "1.000"
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert repr(t.untyped_storage()).startswith(" 0\n")
    assert "device=tpu:0" in repr(t.untyped_storage())
