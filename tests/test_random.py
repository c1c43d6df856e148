"""Random numbers on tpu: seeding, generators, the CUDA-layout RNG state, distributions, errors,
and the promise of csrc/core/ops/tpu_ops_random.h that every value is a pure function of
(seed, offset, the element's row-major logical index in the output view)."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import pytest
import torch
from _subprocess_helpers import run_python

DEV = "tpu"
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def state_fields(state: torch.Tensor) -> tuple[int, int]:
    """(seed, offset) of a 16-byte CUDA-layout RNG state."""
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    assert state.shape == (16,)
    seed, offset = struct.unpack("<Qq", bytes(state.tolist()))
    return seed, offset


def make_state(seed: int, offset: int) -> torch.Tensor:
    return torch.tensor(list(struct.pack("<Qq", seed, offset)), dtype=torch.uint8)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.cpu(), b.cpu())


# ---------------------------------------------------------------------------------------------
# Seeding


def test_manual_seed_reproduces(eager_mode: str) -> None:
    torch.tpu.manual_seed(1234)
    a = torch.rand(100, device=DEV)
    b = torch.randn(3, 7, device=DEV)
    torch.tpu.manual_seed(1234)
    assert same(a, torch.rand(100, device=DEV))
    assert same(b, torch.randn(3, 7, device=DEV))
    assert torch.tpu.initial_seed() == 1234


def test_consecutive_draws_differ(eager_mode: str) -> None:
    torch.tpu.manual_seed(0)
    a = torch.rand(64, device=DEV)
    b = torch.rand(64, device=DEV)
    assert not same(a, b)
    torch.tpu.manual_seed(1)
    assert not same(a, torch.rand(64, device=DEV))


def test_manual_seed_all_and_initial_seed() -> None:
    torch.tpu.manual_seed_all(77)
    assert torch.tpu.initial_seed() == 77
    for i in range(torch.tpu.device_count()):
        assert state_fields(torch.tpu.get_rng_state(i)) == (77, 0)
    states = torch.tpu.get_rng_state_all()
    assert len(states) == torch.tpu.device_count()


def test_torch_manual_seed_seeds_tpu() -> None:
    torch.manual_seed(2024)
    assert torch.tpu.initial_seed() == 2024
    a = torch.rand(10, device=DEV)
    torch.manual_seed(2024)
    assert same(a, torch.rand(10, device=DEV))
    torch.tpu.manual_seed(2024)
    assert same(a, torch.rand(10, device=DEV))


def test_seed_is_random_and_sets_initial_seed() -> None:
    torch.tpu.seed()
    first = torch.tpu.initial_seed()
    torch.tpu.seed()
    second = torch.tpu.initial_seed()
    assert first != second  # two 64-bit random seeds collide with probability 2**-64
    assert state_fields(torch.tpu.get_rng_state())[0] == second
    torch.tpu.seed_all()
    assert torch.tpu.initial_seed() not in (first, second)


def test_manual_seed_accepts_large_and_negative_like_cuda() -> None:
    torch.tpu.manual_seed(2**64 - 1)
    assert torch.tpu.initial_seed() == 2**64 - 1
    torch.manual_seed(-1)  # torch.manual_seed wraps negatives to uint64
    assert torch.tpu.initial_seed() == 2**64 - 1


# ---------------------------------------------------------------------------------------------
# RNG state: CUDA's layout


def test_rng_state_layout() -> None:
    torch.tpu.manual_seed(0x0102030405060708)
    state = torch.tpu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device == torch.device("cpu")
    assert state.shape == (16,)
    assert state[:8].tolist() == [8, 7, 6, 5, 4, 3, 2, 1]  # seed, little-endian uint64
    assert state_fields(state) == (0x0102030405060708, 0)
    torch.rand(5, device=DEV)
    seed, offset = state_fields(torch.tpu.get_rng_state())
    assert seed == 0x0102030405060708 and offset > 0
    torch.randn(5, device=DEV)
    assert state_fields(torch.tpu.get_rng_state())[1] > offset


def test_get_rng_state_device_arguments() -> None:
    torch.tpu.manual_seed(5)
    ref = torch.tpu.get_rng_state()
    for device in (0, "tpu", "tpu:0", torch.device("tpu", 0)):
        assert torch.equal(torch.tpu.get_rng_state(device), ref)


def test_set_rng_state_replays(eager_mode: str) -> None:
    torch.tpu.manual_seed(99)
    torch.rand(3, device=DEV)
    state = torch.tpu.get_rng_state()
    a = torch.randn(50, device=DEV)
    b = torch.randint(0, 1000, (50,), device=DEV)
    torch.tpu.set_rng_state(state)
    assert same(a, torch.randn(50, device=DEV))
    assert same(b, torch.randint(0, 1000, (50,), device=DEV))


def test_handmade_state_equals_seeded_stream() -> None:
    torch.tpu.manual_seed(31337)
    torch.rand(4, device=DEV)
    torch.rand(4, device=DEV)
    seed, offset = state_fields(torch.tpu.get_rng_state())
    expected = torch.rand(8, device=DEV)
    torch.tpu.manual_seed(1)  # something else entirely
    torch.tpu.set_rng_state(make_state(seed, offset))
    assert same(expected, torch.rand(8, device=DEV))
    assert state_fields(torch.tpu.get_rng_state())[0] == 31337


def test_set_rng_state_all_round_trip() -> None:
    torch.tpu.manual_seed_all(8)
    states = torch.tpu.get_rng_state_all()
    a = torch.rand(5, device=DEV)
    torch.tpu.set_rng_state_all(states)
    assert same(a, torch.rand(5, device=DEV))


def test_set_rng_state_does_not_alias_argument() -> None:
    torch.tpu.manual_seed(3)
    state = torch.tpu.get_rng_state()
    torch.tpu.set_rng_state(state)
    state.zero_()
    assert state_fields(torch.tpu.get_rng_state()) == (3, 0)


@pytest.mark.parametrize(
    "bad, exc",
    [
        (torch.zeros(8, dtype=torch.uint8), RuntimeError),
        (torch.zeros(17, dtype=torch.uint8), RuntimeError),
        (torch.zeros(16, dtype=torch.int32), TypeError),
        (torch.zeros(16, dtype=torch.float32), TypeError),
    ],
    ids=["short", "long", "int32", "float32"],
)
def test_set_rng_state_bad_input(bad: torch.Tensor, exc: type[Exception]) -> None:
    torch.tpu.manual_seed(11)
    before = torch.tpu.get_rng_state()
    with pytest.raises(exc):
        torch.tpu.set_rng_state(bad)
    assert torch.equal(torch.tpu.get_rng_state(), before)


def test_set_rng_state_negative_offset_raises() -> None:
    with pytest.raises(RuntimeError):
        torch.tpu.set_rng_state(make_state(1, -4))


# ---------------------------------------------------------------------------------------------
# torch.Generator(device="tpu")


def test_generator_object() -> None:
    g = torch.Generator(device=DEV)
    assert g.device == torch.device("tpu", 0)
    assert g.manual_seed(17) is g
    assert g.initial_seed() == 17
    assert state_fields(g.get_state()) == (17, 0)
    g2 = torch.Generator(device="tpu:0")
    assert g2.device == torch.device("tpu", 0)


def test_generator_reproducible_and_independent(eager_mode: str) -> None:
    torch.tpu.manual_seed(0)
    default_state = torch.tpu.get_rng_state()
    g = torch.Generator(device=DEV).manual_seed(42)
    a = torch.rand(16, device=DEV, generator=g)
    b = torch.randn(16, device=DEV, generator=g)
    # The default generator is untouched by draws from g.
    assert torch.equal(torch.tpu.get_rng_state(), default_state)
    g.manual_seed(42)
    assert same(a, torch.rand(16, device=DEV, generator=g))
    assert same(b, torch.randn(16, device=DEV, generator=g))
    # A fresh generator with the same seed gives the default generator's stream.
    torch.tpu.manual_seed(42)
    assert same(a, torch.rand(16, device=DEV))


GENERATOR_OPS: dict[str, Callable[[torch.Generator], torch.Tensor]] = {
    "rand": lambda g: torch.rand(20, device=DEV, generator=g),
    "randn": lambda g: torch.randn(20, device=DEV, generator=g),
    "randint": lambda g: torch.randint(-5, 5, (20,), device=DEV, generator=g),
    "uniform_": lambda g: torch.empty(20, device=DEV).uniform_(-2, 3, generator=g),
    "normal_": lambda g: torch.empty(20, device=DEV).normal_(1, 2, generator=g),
    "random_": lambda g: torch.empty(20, device=DEV, dtype=torch.int64).random_(generator=g),
    "random_from_to": lambda g: torch.empty(20, device=DEV).random_(3, 9, generator=g),
    "random_to": lambda g: torch.empty(20, device=DEV, dtype=torch.int16).random_(7, generator=g),
    "randperm": lambda g: torch.randperm(20, device=DEV, generator=g),
    "normal_tensor": lambda g: torch.normal(
        torch.zeros(20, device=DEV), torch.ones(20, device=DEV), generator=g
    ),
    "bernoulli": lambda g: torch.bernoulli(torch.full((20,), 0.5, device=DEV), generator=g),
    "multinomial": lambda g: torch.multinomial(
        torch.ones(20, device=DEV), 10, replacement=True, generator=g
    ),
    "exponential_": lambda g: torch.empty(20, device=DEV).exponential_(generator=g),
}


@pytest.mark.parametrize("name", list(GENERATOR_OPS))
def test_generator_argument(name: str, eager_mode: str) -> None:
    op = GENERATOR_OPS[name]
    g = torch.Generator(device=DEV)
    g.manual_seed(123)
    a = op(g)
    assert a.device.type == "tpu"
    state_after = g.get_state()
    assert not torch.equal(state_after, make_state(123, 0))  # the draw advanced g
    b = op(g)
    g.manual_seed(123)
    assert same(a, op(g))
    assert same(b, op(g))
    # The default generator's seed also drives the op.
    torch.tpu.manual_seed(123)
    assert same(a, op(None))  # type: ignore[arg-type]


@pytest.mark.parametrize("op", ["rand", "randperm"])
def test_cpu_generator_for_tpu_op_raises(op: str) -> None:
    g = torch.Generator()
    with pytest.raises(RuntimeError, match="tpu"):
        if op == "rand":
            torch.rand(3, device=DEV, generator=g)
        else:
            torch.randperm(3, device=DEV, generator=g)


TPU_GENERATOR_FOR_CPU_OP = """
import torch
g = torch.Generator(device="tpu")
x = torch.zeros(3)
for method in ("uniform_", "normal_", "random_"):
    try:
        getattr(x, method)(generator=g)
    except RuntimeError as e:
        print("raised", method, e)
    else:
        print("no error", method)
junk = [torch.randn(256) for _ in range(256)]  # would trip over a corrupted heap
print("values", x.tolist())
"""


def test_tpu_generator_for_cpu_op_raises() -> None:
    # In a subprocess: the failure mode is heap corruption.
    result = run_python(TPU_GENERATOR_FOR_CPU_OP)
    assert result.returncode == 0, result.stderr[-2000:]
    for method in ("uniform_", "normal_", "random_"):
        assert f"raised {method}" in result.stdout
    assert "values [0.0, 0.0, 0.0]" in result.stdout


# ---------------------------------------------------------------------------------------------
# fork_rng


def test_fork_rng_restores_tpu_state() -> None:
    torch.tpu.manual_seed(10)
    torch.rand(2, device=DEV)
    expected_state = torch.tpu.get_rng_state()
    expected = torch.rand(6, device=DEV)
    torch.tpu.set_rng_state(expected_state)
    with torch.random.fork_rng(device_type="tpu"):
        torch.tpu.manual_seed(999)
        torch.rand(100, device=DEV)
    assert torch.equal(torch.tpu.get_rng_state(), expected_state)
    assert same(expected, torch.rand(6, device=DEV))


def test_fork_rng_inside_is_same_stream() -> None:
    torch.tpu.manual_seed(4)
    with torch.random.fork_rng(device_type="tpu"):
        inside = torch.rand(5, device=DEV)
    assert same(inside, torch.rand(5, device=DEV))


# ---------------------------------------------------------------------------------------------
# Modes and logical-index invariance


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_same_stream_in_debug_and_strict(dtype: torch.dtype) -> None:
    results = []
    for mode in ("debug", "strict"):
        torch.tpu.set_eager_mode(mode)
        try:
            torch.tpu.manual_seed(2718)
            results.append(
                (
                    torch.rand(333, device=DEV, dtype=dtype).cpu(),
                    torch.randn(333, device=DEV, dtype=dtype).cpu(),
                    torch.randint(0, 50, (333,), device=DEV).cpu(),
                )
            )
        finally:
            torch.tpu.set_eager_mode("strict")
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)


FILLS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "uniform_": lambda t: t.uniform_(-1, 1),
    "normal_": lambda t: t.normal_(0.5, 2.0),
    "random_": lambda t: t.random_(0, 200),
}


@pytest.mark.parametrize("fill", list(FILLS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_transposed_view_fill_equals_contiguous_fill(
    fill: str, dtype: torch.dtype, eager_mode: str
) -> None:
    # ops/tpu_ops_random.h: a value depends on its row-major logical index in the output view, so a
    # transposed view is filled exactly like a contiguous tensor of the view's shape.
    torch.tpu.manual_seed(8)
    base = torch.empty(131, 7, device=DEV, dtype=dtype)
    view = FILLS[fill](base.t())
    assert not view.is_contiguous()
    torch.tpu.manual_seed(8)
    dense = FILLS[fill](torch.empty(7, 131, device=DEV, dtype=dtype))
    assert same(view, dense)
    assert same(base, dense.t())


@pytest.mark.parametrize("fill", list(FILLS))
def test_strided_slice_fill_equals_contiguous_fill(fill: str, eager_mode: str) -> None:
    torch.tpu.manual_seed(9)
    base = torch.zeros(5, 3 * 101, device=DEV)
    view = FILLS[fill](base[:, 1::3])
    torch.tpu.manual_seed(9)
    dense = FILLS[fill](torch.empty(5, 101, device=DEV))
    assert same(view, dense)
    # Elements outside the view are untouched.
    assert base[:, 0::3].abs().sum().item() == 0
    assert base[:, 2::3].abs().sum().item() == 0


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["rand", "randn"])
def test_prefix_of_larger_draw(op: str, dtype: torch.dtype) -> None:
    # Element i's value depends on i, not on the size of the draw (odd sizes cut Box-Muller pairs;
    # 300 crosses the kernel's 128-element chunks).
    fn = torch.rand if op == "rand" else torch.randn
    torch.tpu.manual_seed(6)
    big = fn(1001, device=DEV, dtype=dtype)
    for n in (1, 7, 129, 300):
        torch.tpu.manual_seed(6)
        assert same(fn(n, device=DEV, dtype=dtype), big[:n])


def test_empty_draw_is_allowed() -> None:
    torch.tpu.manual_seed(1)
    assert torch.rand(0, device=DEV).shape == (0,)
    assert torch.empty(0, 3, device=DEV).normal_().shape == (0, 3)


# ---------------------------------------------------------------------------------------------
# Distributions


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_uniform_range(dtype: torch.dtype, eager_mode: str) -> None:
    torch.tpu.manual_seed(3)
    x = torch.empty(20000, device=DEV, dtype=dtype).uniform_(-2.5, 4.0)
    assert x.dtype == dtype and x.shape == (20000,)
    h = x.cpu().double()
    assert h.min().item() >= -2.5
    assert h.max().item() < 4.0
    assert abs(h.mean().item() - 0.75) < 0.1
    assert abs(h.std().item() - 6.5 / math.sqrt(12)) < 0.1
    # rand is uniform on [0, 1)
    r = torch.rand(20000, device=DEV, dtype=dtype).cpu().double()
    assert r.min().item() >= 0 and r.max().item() < 1


def test_uniform_degenerate_range() -> None:
    x = torch.empty(100, device=DEV).uniform_(3.0, 3.0)
    assert torch.equal(x.cpu(), torch.full((100,), 3.0))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_normal_moments(dtype: torch.dtype, eager_mode: str) -> None:
    torch.tpu.manual_seed(4)
    x = torch.empty(40000, device=DEV, dtype=dtype).normal_(3.0, 0.5)
    assert x.dtype == dtype
    h = x.cpu().double()
    assert torch.isfinite(h).all()
    assert abs(h.mean().item() - 3.0) < 0.02
    assert abs(h.std().item() - 0.5) < 0.02
    z = torch.randn(40000, device=DEV, dtype=dtype).cpu().double()
    assert abs(z.mean().item()) < 0.03 and abs(z.std().item() - 1) < 0.03
    # Roughly 68% within one standard deviation.
    assert abs((z.abs() < 1).double().mean().item() - 0.6827) < 0.02


def test_normal_std_zero_is_mean() -> None:
    x = torch.empty(50, device=DEV).normal_(1.5, 0.0)
    assert torch.equal(x.cpu(), torch.full((50,), 1.5))


# (dtype, upper bound of random_() without arguments, inclusive), as PyTorch documents:
# [0, 2^mantissa] for floating types, [0, max] for integer types.
RANDOM_FULL_BOUNDS = [
    (torch.bool, 1),
    (torch.uint8, 255),
    (torch.int8, 127),
    (torch.int16, 2**15 - 1),
    (torch.int32, 2**31 - 1),
    (torch.int64, 2**63 - 1),
    (torch.float16, 2**11),
    (torch.bfloat16, 2**8),
    (torch.float32, 2**24),
    (torch.float64, 2**53),
]


@pytest.mark.parametrize("dtype, upper", RANDOM_FULL_BOUNDS, ids=lambda v: str(v))
def test_random_default_bounds(dtype: torch.dtype, upper: int, eager_mode: str) -> None:
    torch.tpu.manual_seed(12)
    x = torch.empty(20000, device=DEV, dtype=dtype).random_()
    assert x.dtype == dtype
    h = x.cpu()
    lo = h.min().item()
    hi = h.max().item()
    assert lo >= 0 and hi <= upper
    if dtype.is_floating_point:
        assert torch.equal(h, h.round())
    if upper <= 2**11:
        # small ranges are covered end to end by 20000 draws
        assert lo == 0 and hi == upper
    else:
        assert hi > upper // 2


@pytest.mark.parametrize(
    "dtype, lo, hi",
    [
        (torch.int8, -128, 128),
        (torch.uint8, 0, 256),
        (torch.int16, -300, 301),
        (torch.int32, -(2**31), 2**31),
        (torch.int64, -5, 5),
        (torch.float32, -100, 100),
        (torch.float64, -3, 4),
        (torch.bfloat16, -8, 8),
        (torch.float16, 0, 10),
        (torch.bool, 0, 2),
    ],
    ids=lambda v: str(v),
)
def test_random_from_to_bounds(dtype: torch.dtype, lo: int, hi: int, eager_mode: str) -> None:
    torch.tpu.manual_seed(13)
    x = torch.empty(5000, device=DEV, dtype=dtype).random_(lo, hi)
    h = x.cpu().double() if dtype != torch.bool else x.cpu().long()
    assert h.min().item() >= lo and h.max().item() < hi
    if hi - lo <= 300:
        assert h.min().item() == lo and h.max().item() == hi - 1


def test_random_to_only_and_from_only() -> None:
    torch.tpu.manual_seed(14)
    x = torch.empty(4000, device=DEV, dtype=torch.int64).random_(6).cpu()
    assert x.min().item() == 0 and x.max().item() == 5
    y = torch.empty(4000, device=DEV, dtype=torch.int8).random_(-3, None).cpu()
    assert y.min().item() >= -3 and y.max().item() == 127
    z = torch.empty(4000, device=DEV, dtype=torch.int64).random_(-(2**63), None).cpu()
    assert (z < 0).any() and (z > 0).any()  # the whole 64-bit range


def test_randint_dtypes_and_bounds(eager_mode: str) -> None:
    torch.tpu.manual_seed(15)
    x = torch.randint(-7, 9, (3000,), device=DEV)
    assert x.dtype == torch.int64 and x.device.type == "tpu"
    assert x.min().item() == -7 and x.max().item() == 8
    f = torch.randint(0, 3, (100,), device=DEV, dtype=torch.float16)
    assert f.dtype == torch.float16
    assert set(f.cpu().tolist()) <= {0.0, 1.0, 2.0}


@pytest.mark.parametrize("dtype", [torch.uint32, torch.uint64])
def test_random_wide_unsigned(dtype: torch.dtype) -> None:
    x = torch.empty(1000, device=DEV, dtype=dtype).random_(0, 10)
    h = x.cpu().long()
    assert h.min().item() == 0 and h.max().item() == 9
    assert torch.randint(0, 3, (10,), device=DEV, dtype=dtype).dtype == dtype


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_random(dtype: torch.dtype) -> None:
    torch.tpu.manual_seed(16)
    u = torch.rand(5000, device=DEV, dtype=dtype)
    assert u.dtype == dtype
    r = torch.view_as_real(u.cpu())
    assert r.min().item() >= 0 and r.max().item() < 1
    z = torch.randn(20000, device=DEV, dtype=dtype).cpu()
    # Each component has variance 1/2, as on CUDA and CPU.
    assert abs(torch.view_as_real(z).std().item() - math.sqrt(0.5)) < 0.02


# ---------------------------------------------------------------------------------------------
# Errors, as on CUDA


def test_uniform_from_greater_than_to_raises(eager_mode: str) -> None:
    with pytest.raises(RuntimeError, match="from"):
        torch.empty(3, device=DEV).uniform_(2.0, 1.0)


def test_normal_negative_std_raises(eager_mode: str) -> None:
    with pytest.raises(RuntimeError, match="std"):
        torch.empty(3, device=DEV).normal_(0.0, -1.0)
    with pytest.raises(RuntimeError):
        torch.empty(3, device=DEV).normal_(0.0, float("nan"))


@pytest.mark.parametrize("lo, hi", [(3, 3), (5, 2)])
def test_random_from_not_less_than_to_raises(lo: int, hi: int, eager_mode: str) -> None:
    with pytest.raises(RuntimeError, match="from"):
        torch.empty(3, device=DEV).random_(lo, hi)
    with pytest.raises(RuntimeError):
        torch.randint(lo, hi, (3,), device=DEV)


def test_random_out_of_dtype_bounds_raises() -> None:
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.empty(3, device=DEV, dtype=torch.int8).random_(0, 1000)
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.empty(3, device=DEV, dtype=torch.uint8).random_(-1, 10)


def test_random_error_leaves_generator_and_tensor() -> None:
    torch.tpu.manual_seed(17)
    x = torch.zeros(4, device=DEV)
    with pytest.raises(RuntimeError):
        x.random_(5, 1)
    assert state_fields(torch.tpu.get_rng_state()) == (17, 0)
    assert torch.equal(x.cpu(), torch.zeros(4))


@pytest.mark.parametrize(
    "lo, hi, dtype",
    [(0.0, 70000.0, torch.float16), (-3e38, 3e38, torch.float32), (0.0, 1e39, torch.float32)],
    ids=["fp16-to-out-of-range", "fp32-span-overflows", "fp32-to-out-of-range"],
)
def test_uniform_out_of_dtype_range_raises(lo: float, hi: float, dtype: torch.dtype) -> None:
    x = torch.zeros(3, device=DEV, dtype=dtype)
    with pytest.raises(RuntimeError):
        x.uniform_(lo, hi)
        torch.tpu.synchronize()


@pytest.mark.parametrize("method", ["uniform_", "normal_"])
def test_float_fill_on_integer_tensor_raises_not_implemented(method: str) -> None:
    x = torch.zeros(3, device=DEV, dtype=torch.int32)
    with pytest.raises(NotImplementedError):
        getattr(x, method)()


def test_float_fill_on_integer_tensor_raises() -> None:
    # Whatever the exact type, it must raise and leave the tensor alone.
    x = torch.zeros(3, device=DEV, dtype=torch.int32)
    with pytest.raises((TypeError, NotImplementedError)):
        x.uniform_()
    with pytest.raises((TypeError, NotImplementedError)):
        x.normal_()
    assert torch.equal(x.cpu(), torch.zeros(3, dtype=torch.int32))


def test_random_unsupported_dtype_raises() -> None:
    with pytest.raises((TypeError, NotImplementedError)):
        torch.empty(3, device=DEV, dtype=torch.float8_e4m3fn).uniform_()
    with pytest.raises(NotImplementedError):
        torch.empty(3, device=DEV, dtype=torch.uint16).random_()  # CPU/CUDA: not implemented


# ---------------------------------------------------------------------------------------------
# Random ops that fall back to the CPU follow torch.tpu's seed


FALLBACK_RANDOM: dict[str, Callable[[], torch.Tensor]] = {
    "randperm": lambda: torch.randperm(50, device=DEV),
    "bernoulli": lambda: torch.bernoulli(torch.full((200,), 0.3, device=DEV)),
    "bernoulli_p": lambda: torch.empty(200, device=DEV).bernoulli_(0.7),
    "multinomial": lambda: torch.multinomial(torch.ones(30, device=DEV), 10),
    "exponential_": lambda: torch.empty(100, device=DEV).exponential_(),
    "normal_tensors": lambda: torch.normal(torch.zeros(50, device=DEV), torch.ones(50, device=DEV)),
}


@pytest.mark.parametrize("name", list(FALLBACK_RANDOM))
def test_fallback_random_ops_follow_tpu_seed(name: str, eager_mode: str) -> None:
    op = FALLBACK_RANDOM[name]
    torch.tpu.manual_seed(21)
    a = op()
    b = op()
    assert a.device.type == "tpu"
    torch.tpu.manual_seed(21)
    assert same(a, op())
    assert same(b, op())
    assert not same(a, b)
    torch.tpu.manual_seed(22)
    assert not same(a, op())


def test_dropout_follows_tpu_seed(eager_mode: str) -> None:
    x = torch.ones(200, device=DEV)
    torch.tpu.manual_seed(21)
    a = torch.nn.functional.dropout(x, 0.5)
    torch.tpu.manual_seed(21)
    torch.rand(1)  # advances the CPU generator only
    assert same(a, torch.nn.functional.dropout(x, 0.5))


def test_dropout_reproducible_under_torch_manual_seed(eager_mode: str) -> None:
    x = torch.ones(200, device=DEV)
    torch.manual_seed(5)
    a = torch.nn.functional.dropout(x, 0.5)
    torch.manual_seed(5)
    assert same(a, torch.nn.functional.dropout(x, 0.5))
    assert set(a.cpu().tolist()) == {0.0, 2.0}


def test_fallback_random_advances_tpu_offset() -> None:
    torch.tpu.manual_seed(23)
    torch.randperm(10, device=DEV)
    assert state_fields(torch.tpu.get_rng_state())[1] > 0
