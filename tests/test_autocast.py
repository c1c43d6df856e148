"""torch.autocast("tpu") follows CUDA's op policies (the op lists in ATen/autocast_mode.h that
csrc/torch/amp/TpuAutocast.cpp registers for AutocastPrivateUse1): lower-precision ops run in the
autocast dtype, fp32 ops in float32, promote ops in the widest input type, and
binary_cross_entropy is refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

DEV = "tpu"
AMP_DTYPES = [torch.bfloat16, torch.float16]


def rnd(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype).to(DEV)


def pos(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g) + 0.5).to(dtype).to(DEV)


# Lower-precision ops: fp32 inputs give the autocast dtype.
LOWER: dict[str, Callable[[], torch.Tensor]] = {
    "mm": lambda: rnd(3, 4) @ rnd(4, 5, seed=1),
    "matmul": lambda: torch.matmul(rnd(2, 3, 4), rnd(4, 5, seed=1)),
    "linear": lambda: F.linear(rnd(3, 4), rnd(5, 4, seed=1), rnd(5, seed=2)),
    "bmm": lambda: torch.bmm(rnd(2, 3, 4), rnd(2, 4, 5, seed=1)),
    "addmm": lambda: torch.addmm(rnd(3, 5), rnd(3, 4, seed=1), rnd(4, 5, seed=2)),
    "baddbmm": lambda: torch.baddbmm(rnd(2, 3, 5), rnd(2, 3, 4, seed=1), rnd(2, 4, 5, seed=2)),
    "addmv": lambda: torch.addmv(rnd(3), rnd(3, 4, seed=1), rnd(4, seed=2)),
    "mv": lambda: torch.mv(rnd(3, 4), rnd(4, seed=1)),
    "addbmm": lambda: torch.addbmm(rnd(3, 5), rnd(2, 3, 4, seed=1), rnd(2, 4, 5, seed=2)),
    "einsum": lambda: torch.einsum("ij,jk->ik", rnd(3, 4), rnd(4, 5, seed=1)),
    "prelu": lambda: F.prelu(rnd(2, 3), rnd(3, seed=1)),
    "sdpa": lambda: F.scaled_dot_product_attention(
        rnd(1, 2, 4, 8), rnd(1, 2, 4, 8, seed=1), rnd(1, 2, 4, 8, seed=2)
    ),
    "conv2d": lambda: F.conv2d(rnd(1, 2, 5, 5), rnd(3, 2, 3, 3, seed=1)),
    "conv1d": lambda: F.conv1d(rnd(1, 2, 5), rnd(3, 2, 3, seed=1)),
}


@pytest.mark.parametrize("name", list(LOWER))
@pytest.mark.parametrize("dtype", AMP_DTYPES)
def test_lower_precision_ops(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    with torch.autocast(DEV, dtype=dtype):
        out = LOWER[name]()
    assert out.dtype == dtype
    assert out.device.type == "tpu"
    # Outside autocast the same op stays in float32.
    assert LOWER[name]().dtype == torch.float32


def test_lower_precision_value_matches_cast_inputs() -> None:
    a, b = rnd(4, 8), rnd(8, 3, seed=1)
    with torch.autocast(DEV, dtype=torch.bfloat16):
        out = a @ b
    assert torch.equal(out.cpu(), a.cpu().bfloat16() @ b.cpu().bfloat16())


def test_float64_is_not_autocast() -> None:
    a = rnd(3, 4, dtype=torch.float64)
    with torch.autocast(DEV, dtype=torch.bfloat16):
        assert (a @ a.t()).dtype == torch.float64
        assert a.exp().dtype == torch.float64


# fp32 ops: reduced-precision inputs give float32.
FP32: dict[str, Callable[[torch.dtype], torch.Tensor]] = {
    "exp": lambda dt: rnd(3, 4, dtype=dt).exp(),
    "log": lambda dt: pos(3, 4, dtype=dt).log(),
    "log1p": lambda dt: pos(3, dtype=dt).log1p(),
    "rsqrt": lambda dt: pos(3, dtype=dt).rsqrt(),
    "pow": lambda dt: pos(3, dtype=dt).pow(2.5),
    "acos": lambda dt: (pos(3, dtype=dt) * 0.5).acos(),
    "softplus": lambda dt: F.softplus(rnd(3, dtype=dt)),
    "layer_norm": lambda dt: F.layer_norm(
        rnd(2, 6, dtype=dt), (6,), rnd(6, dtype=dt, seed=1), rnd(6, dtype=dt, seed=2)
    ),
    "group_norm": lambda dt: F.group_norm(rnd(2, 4, 3, dtype=dt), 2),
    "mse_loss": lambda dt: F.mse_loss(rnd(5, dtype=dt), rnd(5, dtype=dt, seed=1)),
    "l1_loss": lambda dt: F.l1_loss(rnd(5, dtype=dt), rnd(5, dtype=dt, seed=1)),
    "nll_loss": lambda dt: F.nll_loss(rnd(3, 4, dtype=dt), torch.tensor([0, 3, 1], device=DEV)),
    "kl_div": lambda dt: F.kl_div(rnd(5, dtype=dt), pos(5, dtype=dt), reduction="batchmean"),
    "bce_with_logits": lambda dt: F.binary_cross_entropy_with_logits(
        rnd(5, dtype=dt), pos(5, dtype=dt) - 0.5
    ),
    "cosine_similarity": lambda dt: F.cosine_similarity(rnd(2, 4, dtype=dt), pos(2, 4, dtype=dt)),
    "logsumexp": lambda dt: torch.logsumexp(rnd(3, 4, dtype=dt), 1),
    "cdist": lambda dt: torch.cdist(rnd(3, 4, dtype=dt), rnd(2, 4, dtype=dt, seed=1)),
    "upsample_nearest": lambda dt: F.interpolate(rnd(1, 1, 2, 2, dtype=dt), scale_factor=2),
    # fp32 with set_opt_dtype
    "softmax": lambda dt: torch.softmax(rnd(3, 4, dtype=dt), -1),
    "log_softmax": lambda dt: torch.log_softmax(rnd(3, 4, dtype=dt), -1),
    "sum": lambda dt: rnd(3, 4, dtype=dt).sum(),
    "sum_dim": lambda dt: rnd(3, 4, dtype=dt).sum(1),
    "prod": lambda dt: pos(3, dtype=dt).prod(),
    "cumsum": lambda dt: rnd(3, 4, dtype=dt).cumsum(0),
    "cumprod": lambda dt: pos(3, dtype=dt).cumprod(0),
    "vector_norm": lambda dt: torch.linalg.vector_norm(rnd(3, 4, dtype=dt)),
    # different redispatch signature (fp32_append_dtype)
    "norm": lambda dt: rnd(3, 4, dtype=dt).norm(),
    "norm_dim": lambda dt: torch.norm(rnd(3, 4, dtype=dt), dim=1),
}


@pytest.mark.parametrize("name", list(FP32))
@pytest.mark.parametrize("dtype", AMP_DTYPES)
def test_fp32_ops(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    with torch.autocast(DEV, dtype=dtype):
        out = FP32[name](dtype)
    assert out.dtype == torch.float32
    # Without autocast these ops keep the reduced dtype (CPU's cdist has no reduced kernels).
    if name != "cdist":
        assert FP32[name](dtype).dtype == dtype


def test_set_opt_dtype_respects_explicit_dtype() -> None:
    x = rnd(3, 4, dtype=torch.bfloat16)
    with torch.autocast(DEV, dtype=torch.bfloat16):
        assert x.sum(dtype=torch.float64).dtype == torch.float64
        assert torch.softmax(x, -1, dtype=torch.float64).dtype == torch.float64
        # fp32 inputs stay fp32
        assert torch.softmax(x.float(), -1).dtype == torch.float32


def test_fp32_value_matches_upcast() -> None:
    x = rnd(3, 4, dtype=torch.bfloat16)
    with torch.autocast(DEV, dtype=torch.bfloat16):
        out = torch.softmax(x, -1)
    torch.testing.assert_close(out.cpu(), torch.softmax(x.cpu().float(), -1))


# Promote ops: mixed inputs run in the widest type.
PROMOTE: dict[str, Callable[[torch.dtype], torch.Tensor]] = {
    "addcmul": lambda dt: torch.addcmul(rnd(3), rnd(3, dtype=dt, seed=1), rnd(3, dtype=dt)),
    "addcdiv": lambda dt: torch.addcdiv(rnd(3, dtype=dt), rnd(3, seed=1), pos(3, dtype=dt)),
    "atan2": lambda dt: torch.atan2(rnd(3, dtype=dt), rnd(3, seed=1)),
    "cross": lambda dt: torch.cross(rnd(2, 3, dtype=dt), rnd(2, 3, seed=1), dim=1),
    "dot": lambda dt: torch.dot(rnd(4), rnd(4, dtype=dt, seed=1)),
    "vdot": lambda dt: torch.vdot(rnd(4, dtype=dt), rnd(4, seed=1)),
    "tensordot": lambda dt: torch.tensordot(rnd(2, 3), rnd(3, 2, dtype=dt, seed=1), dims=1),
    "scatter_add": lambda dt: rnd(2, 4).scatter_add(
        0, torch.zeros(1, 4, dtype=torch.long, device=DEV), rnd(1, 4, dtype=dt, seed=1)
    ),
    "index_put": lambda dt: rnd(4).index_put(
        (torch.tensor([0, 2], device=DEV),), rnd(2, dtype=dt, seed=1)
    ),
    "bilinear": lambda dt: F.bilinear(
        rnd(2, 3), rnd(2, 4, dtype=dt, seed=1), rnd(5, 3, 4, seed=2), rnd(5, seed=3)
    ),
}


@pytest.mark.parametrize("name", list(PROMOTE))
@pytest.mark.parametrize("dtype", AMP_DTYPES)
def test_promote_ops(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    with torch.autocast(DEV, dtype=dtype):
        out = PROMOTE[name](dtype)
    assert out.dtype == torch.float32
    assert out.device.type == "tpu"


@pytest.mark.parametrize("name", ["dot", "scatter_add", "cross", "bilinear"])
def test_promote_ops_need_autocast(name: str) -> None:
    # These reject mixed dtypes without autocast (so the promote policy is what makes them work).
    with pytest.raises(RuntimeError):
        PROMOTE[name](torch.bfloat16)


def test_promote_same_dtype_keeps_it() -> None:
    with torch.autocast(DEV, dtype=torch.bfloat16):
        a = rnd(3, dtype=torch.bfloat16)
        assert torch.addcmul(a, a, a).dtype == torch.bfloat16


def test_binary_cross_entropy_is_refused(eager_mode: str) -> None:
    p = pos(4) * 0.5
    t = pos(4, seed=1) * 0.5
    with torch.autocast(DEV, dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, t)
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            nn.BCELoss()(p, t)
        # The safe variant works.
        assert F.binary_cross_entropy_with_logits(p, t).dtype == torch.float32
    # Outside autocast it is fine.
    expected = F.binary_cross_entropy(p.cpu(), t.cpu())
    torch.testing.assert_close(F.binary_cross_entropy(p, t).cpu(), expected)


def test_amp_supported_dtypes() -> None:
    supported = torch.tpu.get_amp_supported_dtype()
    assert set(supported) == {torch.bfloat16, torch.float16}
    assert torch.tpu.is_bf16_supported()


def test_unsupported_autocast_dtype_warns_and_disables() -> None:
    a = rnd(3, 3)
    with pytest.warns(UserWarning, match="not supported"):
        with torch.autocast(DEV, dtype=torch.float64):
            assert not torch.is_autocast_enabled(DEV)
            assert (a @ a).dtype == torch.float32


def test_default_autocast_dtype_is_supported() -> None:
    default = torch.get_autocast_dtype(DEV)
    assert default in torch.tpu.get_amp_supported_dtype()
    a = rnd(3, 3)
    with torch.autocast(DEV):
        assert (a @ a).dtype == default


def test_autocast_state_and_nesting() -> None:
    a = rnd(3, 3)
    assert not torch.is_autocast_enabled(DEV)
    with torch.autocast(DEV, dtype=torch.bfloat16):
        assert torch.is_autocast_enabled(DEV)
        assert torch.get_autocast_dtype(DEV) == torch.bfloat16
        assert not torch.is_autocast_enabled("cpu")
        with torch.autocast(DEV, enabled=False):
            assert not torch.is_autocast_enabled(DEV)
            assert (a @ a).dtype == torch.float32
            assert rnd(3, dtype=torch.bfloat16).exp().dtype == torch.bfloat16
        assert (a @ a).dtype == torch.bfloat16
        with torch.autocast(DEV, dtype=torch.float16):
            assert (a @ a).dtype == torch.float16
        assert (a @ a).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled(DEV)
    assert (a @ a).dtype == torch.float32


def test_autocast_is_per_device() -> None:
    a = rnd(3, 3)
    c = a.cpu()
    with torch.autocast(DEV, dtype=torch.bfloat16):
        assert (c @ c).dtype == torch.float32  # CPU ops are not autocast by tpu's autocast
        assert (a @ a).dtype == torch.bfloat16
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert (a @ a).dtype == torch.float32  # nor tpu ops by CPU's
        assert (c @ c).dtype == torch.bfloat16


def test_autocast_decorator() -> None:
    @torch.autocast(DEV, dtype=torch.bfloat16)
    def f(x: torch.Tensor) -> torch.Tensor:
        return x @ x

    assert f(rnd(2, 2)).dtype == torch.bfloat16


class SmallNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(torch.relu(self.fc1(x)))
        assert h.dtype == torch.float32  # layer_norm is an fp32 op
        return torch.softmax(self.fc2(h), -1)


@pytest.mark.parametrize("dtype", AMP_DTYPES)
def test_small_model_forward_backward(dtype: torch.dtype, eager_mode: str) -> None:
    torch.manual_seed(0)
    model = SmallNet().to(DEV)
    ref = SmallNet()
    ref.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 8, generator=g)
    y = torch.rand(6, 4, generator=g)
    with torch.autocast(DEV, dtype=dtype):
        out = model(x.to(DEV))
        assert out.dtype == torch.float32  # softmax is fp32
        hidden = model.fc1(x.to(DEV))
        assert hidden.dtype == dtype
        loss = F.mse_loss(out, y.to(DEV))
    assert loss.dtype == torch.float32
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert p.grad.dtype == torch.float32 and p.grad.device.type == "tpu", name
        assert p.grad.shape == p.shape and torch.isfinite(p.grad.cpu()).all(), name
    # The same computation by hand on CPU: linear layers in `dtype`, the rest in float32.
    h = F.linear(x.to(dtype), ref.fc1.weight.to(dtype), ref.fc1.bias.to(dtype))
    h = ref.norm(torch.relu(h).float())
    o = F.linear(h.to(dtype), ref.fc2.weight.to(dtype), ref.fc2.bias.to(dtype))
    ref_loss = F.mse_loss(torch.softmax(o.float(), -1), y)
    ref_loss.backward()
    torch.testing.assert_close(loss.detach().cpu(), ref_loss.detach())
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        assert q.grad is not None
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=2e-2, atol=1e-3, msg=name)
