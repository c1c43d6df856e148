"""Native activations and their backward ops, clamps, where, masked_fill, lerp, addcmul and
addcdiv: values against PyTorch CPU in both eager modes, gradients against CPU, and no fallback."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from test_ops_elementwise import ALL, DEV, FLOATS, INTS, compare, nonzero, sample

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=5.0),
    "elu": F.elu,
    "elu_alpha": lambda x: F.elu(x, alpha=0.7),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, alpha=1.3),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 2.0),
    "relu6": F.relu6,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "mish": F.mish,
    "threshold": lambda x: F.threshold(x, 0.3, -2.0),
    "logit_eps": lambda x: torch.logit(torch.sigmoid(x), eps=0.2),
}
EXACT = {"relu", "hardtanh", "relu6", "threshold", "leaky_relu", "hardsigmoid", "hardswish"}


def finite(dtype: torch.dtype, shape: tuple[int, ...] = (6, 7), seed: int = 0) -> torch.Tensor:
    """Sample values without infinities: CPU's float gelu of ±inf is NaN (its vectorized erf)."""
    return sample(dtype, shape, seed).nan_to_num(nan=0.25, posinf=4.0, neginf=-4.0)


def gelu_atol(x: torch.Tensor) -> float:
    """gelu(x) = x * (1 + erf(x / sqrt 2)) / 2: for negative x, erf's rounding next to -1 (an ulp
    of 1 in the computing dtype, float32 for the half types) survives the cancellation and is
    scaled by |x| / 2. CPU's vectorized erf and tpu's each err by a few such ulps: CPU's float32
    gelu is 1e-6 off at x = -6 (0.4 % of the result at x = -4)."""
    eps = torch.finfo(torch.promote_types(x.dtype, torch.float32)).eps
    return 4 * eps * float(x.abs().max())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_forward(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    if name == "logit_eps" and dtype in (torch.bfloat16, torch.float16):
        pytest.skip("CPU rounds each step in these dtypes: test_logit_rounds_once")
    fn = ACTIVATIONS[name]
    x = sample(dtype) if name != "gelu" else finite(dtype)
    atol = gelu_atol(x) if name == "gelu" else 0.0
    compare(fn, x, approx=name not in EXACT, atol=atol)
    compare(lambda t: fn(t.t()), x, approx=name not in EXACT, atol=atol)  # strided input


@pytest.mark.parametrize("name", ["relu", "hardtanh", "relu6", "threshold"])
@pytest.mark.parametrize("dtype", [*INTS, torch.bool], ids=str)
def test_integer_activations(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    compare(ACTIVATIONS[name], sample(dtype))


@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "elu", "leaky_relu", "hardtanh",
                                  "hardswish", "hardsigmoid", "threshold"])  # fmt: skip
def test_activation_inplace(name: str, eager_mode: str) -> None:
    inplace = {
        "relu": torch.relu_,
        "gelu": lambda x: torch.ops.aten.gelu_(x),
        "silu": lambda x: F.silu(x, inplace=True),
        "elu": lambda x: F.elu(x, inplace=True),
        "leaky_relu": lambda x: F.leaky_relu(x, 0.2, inplace=True),
        "hardtanh": lambda x: F.hardtanh(x, -1.0, 1.0, inplace=True),
        "hardswish": lambda x: F.hardswish(x, inplace=True),
        "hardsigmoid": lambda x: F.hardsigmoid(x, inplace=True),
        "threshold": lambda x: F.threshold(x, 0.1, 20.0, inplace=True),
    }[name]
    x = finite(torch.float32)
    atol = gelu_atol(x) if name == "gelu" else 0.0
    compare(lambda t: inplace(t.clone()), x, approx=True, atol=atol)


GRAD_ACTIVATIONS = [n for n in ACTIVATIONS if n not in {"threshold"}]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", GRAD_ACTIVATIONS)
def test_activation_gradients(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    """Backward ops (gelu_backward, silu_backward, threshold_backward, ...) against CPU."""
    if name == "logit_eps" and dtype == torch.bfloat16:
        pytest.skip("CPU rounds each step of bfloat16 logit")
    fn = ACTIVATIONS[name]
    x = finite(dtype, (5, 8))
    g = finite(dtype, (5, 8), seed=7)

    def grad(t: torch.Tensor, gout: torch.Tensor) -> torch.Tensor:
        t = t.detach().requires_grad_()
        fn(t).backward(gout)
        return t.grad

    expected = grad(x, g)
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    actual = grad(x.to(DEV), g.to(DEV))
    torch.tpu.synchronize()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    tol = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-14), torch.bfloat16: (2e-2, 1e-2)}
    torch.testing.assert_close(actual.cpu(), expected, rtol=tol[dtype][0], atol=tol[dtype][1])
    stats = torch.tpu.fallback_stats()
    assert not [k for k in stats if "backward" in k or k.startswith(("aten::mul", "aten::add"))], (
        stats
    )


def test_backward_ops_direct(eager_mode: str) -> None:
    x, g = finite(torch.float32), finite(torch.float32, seed=3)
    y = torch.sigmoid(x)
    ops = torch.ops.aten
    compare(lambda a, b: ops.sigmoid_backward(a, b), g, y)
    compare(lambda a, b: ops.tanh_backward(a, b), g, torch.tanh(x))
    compare(lambda a, b: ops.threshold_backward(a, b, 0.2), g, x)
    compare(lambda a, b: ops.gelu_backward(a, b), g, x, approx=True)
    compare(lambda a, b: ops.gelu_backward(a, b, approximate="tanh"), g, x, approx=True)
    compare(lambda a, b: ops.silu_backward(a, b), g, x, approx=True)
    compare(lambda a, b: ops.elu_backward(a, 1.0, 1.0, 1.0, True, b), g, F.elu(x), approx=True)
    compare(lambda a, b: ops.leaky_relu_backward(a, b, 0.1, False), g, x)
    compare(lambda a, b: ops.hardtanh_backward(a, b, -0.5, 0.5), g, x)
    compare(lambda a, b: ops.hardswish_backward(a, b), g, x)
    compare(lambda a, b: ops.hardsigmoid_backward(a, b), g, x)
    compare(lambda a, b: ops.softplus_backward(a, b, 1.0, 20.0), g, x, approx=True)
    compare(lambda a, b: ops.mish_backward(a, b), g, x, approx=True)
    compare(lambda a, b: ops.logit_backward(a, b, 0.1), g, torch.sigmoid(x), approx=True)


# ---------------------------------------------------------------------------------------------
# clamps


@pytest.mark.parametrize("dtype", [*INTS, *FLOATS], ids=str)
def test_clamp_scalars(dtype: torch.dtype, eager_mode: str) -> None:
    x = sample(dtype)
    compare(lambda t: torch.clamp(t, -3, 5), x)
    compare(lambda t: torch.clamp(t, min=2), x)
    compare(lambda t: torch.clamp(t, max=-1), x)
    compare(lambda t: torch.clamp(t, 4, 1), x)  # min > max: max wins
    compare(lambda t: torch.clamp(t, 0.5, 2.5), x)  # float bounds promote integers
    compare(lambda t: t.clone().clamp_(-1, 1), x)
    compare(lambda t: t.clamp_min(1).clamp_max(3), x)


def test_clamp_nan_bounds_and_errors(eager_mode: str) -> None:
    x = sample(torch.float32)
    compare(lambda t: torch.clamp(t, min=float("nan")), x)
    compare(lambda t: torch.clamp(t, -1.0, float("nan")), x)
    compare(lambda t: torch.clamp(t), x)  # neither bound: an error
    compare(lambda t: torch.clamp(t.clone().to(torch.int32), 0.5, 1.0, out=t.to(torch.int32)), x)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.bfloat16], ids=str)
def test_clamp_tensors(dtype: torch.dtype, eager_mode: str) -> None:
    x, lo, hi = sample(dtype), sample(dtype, (7,), seed=2), sample(dtype, (6, 1), seed=3)
    compare(lambda t, a, b: torch.clamp(t, a, b), x, lo, hi)
    compare(lambda t, a: torch.clamp(t, min=a), x, lo)
    compare(lambda t, b: torch.clamp(t, max=b), x, hi)
    compare(lambda t, a: torch.clamp_min(t, a), x, lo)
    compare(lambda t, b: torch.clamp_max(t, b), x, hi)


# ---------------------------------------------------------------------------------------------
# where, masked_fill


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_where(dtype: torch.dtype, eager_mode: str) -> None:
    cond = sample(torch.bool, (6, 7), seed=4)
    a, b = sample(dtype), sample(dtype, (7,), seed=2)
    compare(torch.where, cond, a, b)
    compare(lambda c, x: torch.where(c, x, 0), cond, a)
    compare(lambda c, x: torch.where(c, 1.5, x), cond, a)
    compare(lambda c, x, y: torch.where(c, x, y, out=torch.empty_like(x)), cond, a, a.flip(0))


def test_where_promotion_and_errors(eager_mode: str) -> None:
    cond = sample(torch.bool, (6, 7), seed=4)
    compare(torch.where, cond, sample(torch.int32), sample(torch.float16, seed=2))
    compare(torch.where, cond[:, :1], sample(torch.int8, (7,)), sample(torch.int64, (6, 1)))
    compare(torch.where, cond.int(), sample(torch.float32), sample(torch.float32, seed=2))
    compare(lambda c, x: torch.where(c, x, x), cond.t(), sample(torch.float32, (7, 6)))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_masked_fill(dtype: torch.dtype, eager_mode: str) -> None:
    x = sample(dtype)
    mask, row_mask = sample(torch.bool, (6, 7), seed=4), sample(torch.bool, (7,), seed=5)
    value = True if dtype == torch.bool else 3
    compare(lambda t, m: t.clone().masked_fill_(m, value), x, mask)
    compare(lambda t, m: t.masked_fill(m, value), x, row_mask)
    compare(lambda t, m: t.masked_fill(m, torch.tensor(value, dtype=dtype)), x, mask)
    compare(lambda t, m, v: t.clone().masked_fill_(m, v), x, mask, x[1, 2])  # tpu 0-dim value


def test_masked_fill_conversions_and_errors(eager_mode: str) -> None:
    x, mask = sample(torch.int32), sample(torch.bool, (6, 7), seed=4)
    compare(lambda t, m: t.masked_fill(m, 2.7), x, mask)  # the value converts to int32
    compare(lambda t, m: t.masked_fill(m, float("-inf")), sample(torch.bfloat16), mask)
    compare(lambda t, m: t.masked_fill(m, 1.0), x, mask.int())  # not a bool mask
    compare(lambda t, m: t.masked_fill(m, torch.ones(2)), x, mask)  # not a 0-dim value
    compare(lambda t, m: t[0].masked_fill_(m, 1), x, mask)  # mask bigger than self


# ---------------------------------------------------------------------------------------------
# lerp, addcmul, addcdiv


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lerp(dtype: torch.dtype, eager_mode: str) -> None:
    a, b, w = finite(dtype), finite(dtype, seed=2), finite(dtype, (7,), seed=3)
    compare(lambda x, y: torch.lerp(x, y, 0.3), a, b, approx=True)
    compare(lambda x, y: torch.lerp(x, y, 0.8), a, b, approx=True)
    compare(torch.lerp, a, b, w, approx=True)
    compare(lambda x, y: x.clone().lerp_(y, 0.25), a, b, approx=True)


@pytest.mark.parametrize("dtype", [*FLOATS, torch.int32, torch.int64], ids=str)
def test_addcmul_addcdiv(dtype: torch.dtype, eager_mode: str) -> None:
    a, b, c = sample(dtype), sample(dtype, seed=2), nonzero(dtype, (7,), seed=3)
    value = 0.5 if dtype.is_floating_point else 3
    compare(lambda x, y, z: torch.addcmul(x, y, z, value=value), a, b, c, approx=True)
    compare(lambda x, y, z: torch.addcdiv(x, y, z, value=value), a, b, c, approx=True)
    compare(lambda x, y, z: x.clone().addcmul_(y, z), a, b, c, approx=True)


def test_optimizer_step_has_no_elementwise_fallback(eager_mode: str) -> None:
    """An SGD-with-momentum and an Adam step (foreach off) run their elementwise math natively."""
    for make in (
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=False),
        lambda p: torch.optim.Adam(p, lr=0.01, foreach=False),
    ):
        w_cpu = torch.nn.Parameter(finite(torch.float32))
        w_dev = torch.nn.Parameter(w_cpu.detach().to(DEV))
        for w in (w_cpu, w_dev):
            opt = make([w])
            for _ in range(2):
                w.grad = torch.sin(w.detach()) * 0.1
                opt.step()
        torch.tpu.synchronize()
        torch.testing.assert_close(w_dev.detach().cpu(), w_cpu.detach(), rtol=1e-5, atol=1e-6)


def test_device_mismatch() -> None:
    x = torch.ones(3, device=DEV)
    for fn in (
        lambda: torch.where(x > 0, x, torch.ones(3)),
        lambda: x.masked_fill_(torch.ones(3, dtype=torch.bool), 1.0),
        lambda: torch.clamp(x, torch.zeros(3)),
        lambda: x + torch.ones(3),
    ):
        with pytest.raises(RuntimeError, match="same device"):
            fn()


# ---------------------------------------------------------------------------------------------
# Differences from CPU that a differential fuzz run found (issue 20)


def test_cpu_scalars_where_cuda_takes_them(eager_mode: str) -> None:
    """A CPU 0-dim tensor is a scalar wherever CUDA's kernel takes one: TensorIterator ops that
    allow one (clamp_min/clamp_max, lerp's weight, addcmul, pow, the binary ops) and where, whose
    three operands may all be. compare() keeps 0-dim tensors on the CPU."""
    x, y = finite(torch.float32), finite(torch.float32, seed=2)
    one, half, yes = torch.tensor(1.0), torch.tensor(0.5), torch.tensor(True)
    compare(lambda c, a: torch.where(c, a, a * 2), yes, x)
    compare(lambda c, a, b: torch.where(c, a, b), torch.tensor(False), x, y)
    compare(lambda c, s, a: torch.where(c, s, a), x > 0, one, x)
    compare(lambda c, s, t, a: torch.where(c, s, t) + a, yes, one, half, x)
    compare(lambda a, s: torch.clamp_min(a, s), x, one)
    compare(lambda a, s: torch.clamp_max(a, s), x, one)
    compare(lambda a, b, w: torch.lerp(a, b, w), x, y, half, approx=True)
    compare(lambda a, s, b: torch.addcmul(a, s, b), x, half, y, approx=True)
    compare(lambda a, s: torch.pow(a.abs(), s), x, half, approx=True)
    compare(lambda s, a: torch.pow(s, a), half, x, approx=True)
    compare(lambda a, m, v: a.masked_fill(m, v), x, x > 0, one)


def test_cpu_scalars_cuda_refuses(eager_mode: str) -> None:
    """Where CUDA refuses a CPU 0-dim tensor, tpu does too (CPU computes): clamp's tensor bounds,
    addcdiv (plain ternary TensorIterator ops), a second CPU scalar of one op, a CPU mask."""
    x = torch.ones(3, device=DEV)
    one = torch.tensor(1.0)
    for fn in (
        lambda: torch.clamp(x, None, one),
        lambda: torch.clamp(x, one, one),
        lambda: x.clone().clamp_(min=one),
        lambda: torch.addcdiv(x, x, one),
        lambda: torch.lerp(x, one, one),
        lambda: x.masked_fill(torch.tensor(True), 1.0),
    ):
        with pytest.raises(RuntimeError, match="device|CPU scalars"):
            fn()


def test_where_takes_a_uint8_condition(eager_mode: str) -> None:
    """A uint8 condition is deprecated (a warning, once) but taken as bool, as on CPU."""
    cond = sample(torch.uint8, (6, 7), seed=4) % 2
    compare(torch.where, cond, sample(torch.float32), sample(torch.float32, seed=2))
    compare(lambda c, a: torch.where(c, a, 0.0), torch.tensor(1, dtype=torch.uint8), cond.float())


@pytest.mark.parametrize("shape", [(0,), (6, 7)], ids=str)
def test_masked_fill_value_must_fit(shape: tuple[int, ...], eager_mode: str) -> None:
    """The value converts to self's dtype with PyTorch's range check, empty tensors included."""
    mask = sample(torch.bool, shape, seed=4)
    for dtype, value in ((torch.uint8, 300), (torch.uint8, -1), (torch.int8, 1000)):
        x = sample(dtype, shape)
        compare(lambda t, m, v=value: t.masked_fill(m, v), x, mask)
        compare(lambda t, m, v=value: t.masked_fill(m, torch.tensor(v)), x, mask)
        compare(lambda t, m, v=value: t.masked_fill(m, torch.tensor(v, device=t.device)), x, mask)
    compare(lambda t, m: t.masked_fill(m, 1e10), sample(torch.float16, shape), mask)
    compare(lambda t, m: t.masked_fill(m, 2.5), sample(torch.int16, shape), mask)


def test_nan_to_num_casts_its_replacements(eager_mode: str) -> None:
    """nan_to_num casts its replacement values (a value out of range becomes infinite), as
    PyTorch's kernel does, instead of refusing them."""
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        x = sample(dtype)
        compare(lambda t: torch.nan_to_num(t, nan=1e6, posinf=1e10, neginf=-1e300), x)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_infinities_follows_cuda(
    dtype: torch.dtype, approximate: str, eager_mode: str
) -> None:
    """gelu(inf) = inf and gelu(-inf) = NaN, as CUDA's formula x * 0.5 * (1 + erf(x / sqrt 2))
    gives (PyTorch CPU's vectorized float32/bfloat16 kernel gives NaN for +inf too)."""
    x = torch.tensor([math.inf, -math.inf] * 20, dtype=dtype, device=DEV)
    y = F.gelu(x, approximate=approximate).cpu()
    assert y[0::2].eq(math.inf).all() and y[1::2].isnan().all()


@pytest.mark.parametrize("name", ["silu", "mish", "gelu", "sigmoid"])
def test_double_backward(name: str) -> None:
    """Second derivatives (create_graph=True) match CPU: the backward kernels that skip autograd
    are not used when a graph is built."""
    fn = ACTIVATIONS[name]

    def second(x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), x)
        return h

    x = finite(torch.float64, (4, 5))
    torch.testing.assert_close(second(x.to(DEV)).cpu(), second(x), rtol=1e-9, atol=1e-12)
