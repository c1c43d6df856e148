"""Autograd on tpu: gradients equal CPU's (values, dtype, shape, strides, device), through views,
in-place ops on views, index_select, broadcasting and copies from the CPU; and the registration
lint: an op with a PrivateUse1 kernel and a CompositeImplicitAutograd kernel must also have an
AutogradPrivateUse1 kernel, or its gradient on tpu is silently undefined."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest
import torch
from torch import nn

DEV = "tpu"

Fn = Callable[[list[torch.Tensor]], torch.Tensor]


def leaves(
    shapes: list[tuple[int, ...]], device: str, dtype: torch.dtype = torch.float32, seed: int = 0
) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randn(*s, generator=g, dtype=torch.float64).to(dtype).to(device).requires_grad_()
        for s in shapes
    ]


def check_grads(
    fn: Fn,
    shapes: list[tuple[int, ...]],
    dtype: torch.dtype = torch.float32,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Runs fn forward and backward on CPU and tpu; compares the outputs and every leaf's grad."""
    cpu_in = leaves(shapes, "cpu", dtype)
    tpu_in = leaves(shapes, DEV, dtype)
    cpu_out = fn(cpu_in)
    tpu_out = fn(tpu_in)
    assert tpu_out.device.type == "tpu"
    assert tpu_out.dtype == cpu_out.dtype and tpu_out.shape == cpu_out.shape
    torch.testing.assert_close(tpu_out.detach().cpu(), cpu_out.detach(), rtol=rtol, atol=atol)
    seed = torch.Generator().manual_seed(1)
    grad_out = torch.randn(cpu_out.shape, generator=seed, dtype=torch.float64).to(cpu_out.dtype)
    cpu_out.backward(grad_out)
    tpu_out.backward(grad_out.to(DEV))
    for c, t in zip(cpu_in, tpu_in, strict=True):
        assert c.grad is not None and t.grad is not None
        assert t.grad.device == torch.device("tpu", 0)
        assert t.grad.dtype == c.grad.dtype
        assert t.grad.shape == c.grad.shape
        assert t.grad.stride() == c.grad.stride()
        torch.testing.assert_close(t.grad.cpu(), c.grad, rtol=rtol, atol=atol)


def inplace_on_views(x: list[torch.Tensor]) -> torch.Tensor:
    a = x[0].clone()
    a[0].mul_(x[1][0])  # in-place on a row view, with a grad-requiring operand
    a.t()[1].add_(3.0)  # in-place on a column view through a transpose
    a[:, ::2].mul_(2.0)  # in-place on a strided slice
    a.diagonal().sub_(x[1][1])
    return (a * a).sum(0)


def copy_into_view(x: list[torch.Tensor]) -> torch.Tensor:
    buf = torch.zeros(4, 6, device=x[0].device)
    buf[1:3, ::2].copy_(x[0][:2, :3])  # copy_ into a view, through autograd
    buf[0].copy_(x[1][0])
    return buf.exp().sum(1)


FUNCTIONS: dict[str, tuple[Fn, list[tuple[int, ...]]]] = {
    "elementwise": (lambda x: (x[0] * x[1] + x[0].sin()).exp(), [(3, 4), (3, 4)]),
    "broadcast": (lambda x: x[0] * x[1] - x[2], [(3, 4), (4,), (3, 1)]),
    "expand": (lambda x: x[0].expand(5, 3, 4).sum(0) * x[1], [(1, 4), (3, 4)]),
    "reduction": (lambda x: x[0].sum(1) + x[0].mean(0).sum(), [(3, 4)]),
    "matmul": (lambda x: x[0] @ x[1], [(3, 4), (4, 5)]),
    "views": (
        lambda x: x[0].view(2, 6).t()[1:, :].reshape(-1) * 2,
        [(3, 4)],
    ),
    "slicing": (lambda x: x[0][1:, ::2] * x[0][:-1, 1::2], [(4, 6)]),
    "transpose_permute": (lambda x: x[0].permute(2, 0, 1).transpose(0, 1) ** 2, [(2, 3, 4)]),
    "select_unbind": (lambda x: torch.stack(x[0].unbind(1)[::-1]) * x[0][0, 0], [(3, 4)]),
    "split_cat": (lambda x: torch.cat(list(x[0].split(2, 1))[::-1], 0), [(3, 6)]),
    "index_select": (
        lambda x: x[0].index_select(0, torch.tensor([2, 0, 2, 1], device=x[0].device)),
        [(3, 5)],
    ),
    "index_select_dim1": (
        lambda x: x[0].index_select(1, torch.tensor([4, 4, 0], device=x[0].device)).tanh(),
        [(3, 5)],
    ),
    "advanced_index": (lambda x: x[0][torch.tensor([0, 0, 2])] * 3, [(4, 2)]),
    "inplace_on_views": (inplace_on_views, [(4, 4), (2, 4)]),
    "copy_into_view": (copy_into_view, [(3, 4), (2, 6)]),
    "softmax_logsumexp": (
        lambda x: torch.softmax(x[0], -1) + torch.logsumexp(x[0], 0, keepdim=True),
        [(3, 5)],
    ),
    "unfold": (lambda x: x[0].unfold(1, 3, 2).sum(-1), [(2, 7)]),
    "conv2d": (
        lambda x: torch.nn.functional.conv2d(x[0], x[1], x[2], padding=1, stride=(1, 2)),
        [(2, 2, 5, 6), (3, 2, 3, 3), (3,)],
    ),
    "conv_transpose1d_groups": (
        lambda x: torch.nn.functional.conv_transpose1d(x[0], x[1], groups=2, stride=2),
        [(1, 4, 5), (4, 1, 3)],
    ),
    "as_strided": (lambda x: x[0].as_strided((3, 3), (1, 3)) * 2, [(9,)]),
    "complex_view": (
        lambda x: torch.view_as_real(torch.view_as_complex(x[0]) * (1 + 2j)),
        [(3, 2)],
    ),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_grad_matches_cpu(name: str, eager_mode: str) -> None:
    fn, shapes = FUNCTIONS[name]
    check_grads(fn, shapes)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16])
def test_grad_dtypes(dtype: torch.dtype, eager_mode: str) -> None:
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype in (torch.bfloat16, torch.float16) else {}
    check_grads(lambda x: (x[0] * x[1]).sum(1) + x[0][:, 0], [(3, 4), (3, 4)], dtype, **tol)


def test_grad_of_noncontiguous_leaf_keeps_layout(eager_mode: str) -> None:
    # The gradient layout contract: a dense non-overlapping leaf gets a grad with its strides.
    for device in ("cpu", DEV):
        p = torch.zeros(3, 4, device=device).t().requires_grad_()
        (p * torch.arange(12.0, device=device).reshape(4, 3)).sum().backward()
        assert p.grad is not None
        assert p.grad.stride() == p.stride() == (1, 4)
        assert torch.equal(p.grad.cpu(), torch.arange(12.0).reshape(4, 3))


def test_copy_from_cpu_flows_to_cpu_leaf(eager_mode: str) -> None:
    c = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = torch.zeros(3, device=DEV)
    x.copy_(c)
    (x * x).sum().backward()
    assert c.grad is not None and c.grad.device.type == "cpu"
    assert torch.equal(c.grad, 2 * c.detach())
    d = torch.tensor([0.5, 1.5], requires_grad=True)
    (d.to(DEV) ** 3).sum().backward()
    assert d.grad is not None and d.grad.device.type == "cpu"
    assert torch.allclose(d.grad, 3 * d.detach() ** 2)


def test_tpu_to_cpu_backward(eager_mode: str) -> None:
    x = torch.tensor([1.0, 2.0], device=DEV, requires_grad=True)
    (x.cpu() * torch.tensor([3.0, 4.0])).sum().backward()
    assert x.grad is not None and x.grad.device.type == "tpu"
    assert torch.equal(x.grad.cpu(), torch.tensor([3.0, 4.0]))


def test_grad_accumulates_and_zero_grad(eager_mode: str) -> None:
    x = torch.ones(3, device=DEV, requires_grad=True)
    for _ in range(3):
        (x * 2).sum().backward()
    assert x.grad is not None
    assert torch.equal(x.grad.cpu(), torch.full((3,), 6.0))
    x.grad.zero_()
    assert torch.equal(x.grad.cpu(), torch.zeros(3))


def test_autograd_grad_and_double_backward(eager_mode: str) -> None:
    for device in ("cpu", DEV):
        x = torch.tensor([0.5, 1.0, 2.0], device=device, requires_grad=True)
        (g,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
        (gg,) = torch.autograd.grad(g.sum(), x)
        assert g.device.type == device and gg.device.type == device
        torch.testing.assert_close(gg.cpu(), 6 * x.detach().cpu())


def test_inplace_on_leaf_view_raises_like_cpu() -> None:
    x = torch.ones(3, device=DEV, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y = x.exp()
        y.add_(1)
        y.sum().backward()


def _mlp(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(8, 16),
        nn.GELU(),
        nn.LayerNorm(16),
        nn.Linear(16, 16),
        nn.Tanh(),
        nn.Linear(16, 3),
    )


def test_mlp_gradients_and_training_match_cpu(eager_mode: str) -> None:
    cpu_model = _mlp(0)
    tpu_model = _mlp(0).to(DEV)
    g = torch.Generator().manual_seed(3)
    data = torch.randn(10, 8, generator=g)
    target = torch.randint(0, 3, (10,), generator=g)
    opt_c = torch.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD(tpu_model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        opt_c.zero_grad()
        opt_t.zero_grad()
        loss_c = nn.functional.cross_entropy(cpu_model(data), target)
        loss_t = nn.functional.cross_entropy(tpu_model(data.to(DEV)), target.to(DEV))
        loss_c.backward()
        loss_t.backward()
        torch.testing.assert_close(loss_t.detach().cpu(), loss_c.detach())
        for (name, pc), pt in zip(
            cpu_model.named_parameters(), tpu_model.parameters(), strict=True
        ):
            assert pt.grad is not None and pc.grad is not None, name
            assert pt.grad.device.type == "tpu" and pt.grad.dtype == pc.grad.dtype
            assert pt.grad.shape == pc.grad.shape and pt.grad.stride() == pc.grad.stride()
            torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-4, atol=1e-5)
        opt_c.step()
        opt_t.step()
    for pc, pt in zip(cpu_model.parameters(), tpu_model.parameters(), strict=True):
        torch.testing.assert_close(pt.detach().cpu(), pc.detach(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_rnn_gradients_match_cpu(cell: str, eager_mode: str) -> None:
    def run(device: str) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        torch.manual_seed(0)
        rnn: nn.Module = (nn.LSTM if cell == "lstm" else nn.GRU)(3, 4, num_layers=2)
        rnn = rnn.to(device)
        g = torch.Generator().manual_seed(1)
        x = torch.randn(5, 2, 3, generator=g).to(device).requires_grad_()
        out = rnn(x)[0]
        (out * out).sum().backward()
        assert x.grad is not None
        return out.detach().cpu(), [p.grad.cpu() for p in rnn.parameters()], x.grad.cpu()

    out_c, grads_c, xg_c = run("cpu")
    out_t, grads_t, xg_t = run(DEV)
    torch.testing.assert_close(out_t, out_c)
    torch.testing.assert_close(xg_t, xg_c)
    for gt, gc in zip(grads_t, grads_c, strict=True):
        assert gt.shape == gc.shape
        torch.testing.assert_close(gt, gc, rtol=1e-4, atol=1e-5)


def test_no_grad_and_detach(eager_mode: str) -> None:
    x = torch.ones(3, device=DEV, requires_grad=True)
    with torch.no_grad():
        y = x * 2
    assert not y.requires_grad
    z = x.detach()
    assert not z.requires_grad and z.data_ptr() == x.data_ptr()


# ---------------------------------------------------------------------------------------------
# The registration lint

LINT_SELFTEST_NS = "tpu_autograd_lint_selftest"


def missing_autograd_kernels(names: Iterable[str]) -> list[str]:
    """Ops with a PrivateUse1 kernel and a CompositeImplicitAutograd kernel but no kernel for
    AutogradPrivateUse1: the tpu kernel hides the composite from autograd, and the gradient is
    silently undefined."""

    def has(name: str, key: str) -> bool:
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, key)

    return sorted(
        name
        for name in names
        if has(name, "PrivateUse1")
        and has(name, "CompositeImplicitAutograd")
        and not has(name, "AutogradPrivateUse1")
    )


def test_registration_lint() -> None:
    names = [
        n
        for n in torch._C._dispatch_get_all_op_names()
        if not n.startswith(LINT_SELFTEST_NS + "::")
    ]
    assert len(names) > 1000
    assert any(torch._C._dispatch_has_kernel_for_dispatch_key(n, "PrivateUse1") for n in names)
    bad = missing_autograd_kernels(names)
    assert bad == [], (
        "ops with a PrivateUse1 kernel that hides their CompositeImplicitAutograd kernel from "
        f"autograd (register AutogradPrivateUse1 for them): {bad}"
    )


def test_registration_lint_catches_a_bad_registration() -> None:
    lib = torch.library.Library(LINT_SELFTEST_NS, "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.define("thrice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
        lib.impl("twice", lambda x: x * 2, "PrivateUse1")
        lib.impl("thrice", lambda x: x * 3, "CompositeImplicitAutograd")
        lib.impl("thrice", lambda x: x * 3, "PrivateUse1")
        lib.impl("thrice", lambda x: x * 3, "AutogradPrivateUse1")
        names = [f"{LINT_SELFTEST_NS}::twice", f"{LINT_SELFTEST_NS}::thrice"]
        assert missing_autograd_kernels(names) == [f"{LINT_SELFTEST_NS}::twice"]
    finally:
        lib._destroy()


@pytest.mark.parametrize(
    "op",
    [
        "aten::view",
        "aten::as_strided",
        "aten::index_select",
        "aten::unfold",
        "aten::view_as_real",
        "aten::view_as_complex",
        "aten::_reshape_alias",
        "aten::fill_.Scalar",
    ],
)
def test_native_ops_are_differentiable_on_tpu(op: str) -> None:
    # Native ops with PrivateUse1 kernels keep an autograd kernel (the lint's positive side).
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op, "PrivateUse1")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(
        op, "Autograd"
    ) or torch._C._dispatch_has_kernel_for_dispatch_key(op, "AutogradPrivateUse1")


def test_autograd_threads_let_go_of_python_callbacks_at_exit(eager_mode: str) -> None:
    """A backward's final callback (FSDP2 queues one) lives in the graph task, which autograd's
    tpu thread may still hold after backward returns; releasing it needs the GIL, fatal while the
    interpreter finalizes. The exit handler makes the thread let go first."""
    import weakref

    from torch.autograd import Variable

    class Callback:
        def __call__(self) -> None:
            pass

    refs: list[weakref.ref] = []

    def queue(grad: torch.Tensor) -> torch.Tensor:
        callback = Callback()
        refs.append(weakref.ref(callback))
        Variable._execution_engine.queue_callback(callback)
        return grad

    x = torch.ones(3, device=DEV, requires_grad=True)
    y = x * 2
    y.register_hook(queue)
    y.sum().backward()
    torch.tpu._drain_autograd_threads()
    assert len(refs) == 1 and refs[0]() is None
    torch.testing.assert_close(x.grad.cpu(), torch.full((3,), 2.0))
