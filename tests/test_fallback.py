"""The counted CPU fallback (csrc/torch/ops/TpuFallback.cpp): results equal CPU's, every call is
counted, in-place and out= semantics and aliasing hold, devices are checked as CUDA checks them,
TORCH_TPU_CPU_FALLBACK=0 turns it into NotImplementedError, and no view op ever reaches it."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch
from _subprocess_helpers import run_python

DEV = "tpu"


def assert_same(actual: torch.Tensor, expected: torch.Tensor, exact: bool = True) -> None:
    """tpu result vs CPU result: device, dtype, shape, strides and values."""
    assert actual.device.type == "tpu"
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.stride() == expected.stride()
    if exact:
        assert torch.equal(actual.cpu(), expected)
    else:
        torch.testing.assert_close(actual.cpu(), expected)


def make(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=g).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


# ---------------------------------------------------------------------------------------------
# Values equal CPU's, and calls are counted

UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "add": lambda x: x + x,
    "mul_scalar": lambda x: x * 3,
    "sub_alpha": lambda x: torch.sub(x, x.flip(0), alpha=2),
    "exp": torch.exp,
    "tanh": torch.tanh,
    "sum_dim": lambda x: x.sum(1),
    "mean": lambda x: x.mean(),
    "cumsum": lambda x: x.cumsum(0),
    "softmax": lambda x: torch.softmax(x, -1),
    "matmul": lambda x: x @ x.t(),
    "clamp": lambda x: x.clamp(-0.5, 0.5),
    "where": lambda x: torch.where(x > 0, x, -x),
    "cat": lambda x: torch.cat([x, x * 2], 1),
    "stack": lambda x: torch.stack([x, x]),
    "gather": lambda x: x.gather(1, (x.abs() * 10).long() % x.shape[1]),
    "argmax": lambda x: x.argmax(1),
    "nonzero": lambda x: (x > 0).nonzero(),
    "masked_fill": lambda x: x.masked_fill(x < 0, 7.0),
    "transposed_exp": lambda x: x.t().exp(),
    "strided_mul": lambda x: x[:, ::2] * 2,
    "comparison": lambda x: x > 0.1,
    "to_int": lambda x: (x * 10).to(torch.int32),
    "pow": lambda x: x.abs() ** 0.5,
}


@pytest.mark.parametrize("name", list(UNARY))
def test_fallback_matches_cpu(name: str, eager_mode: str) -> None:
    fn = UNARY[name]
    x = make(5, 6)
    expected = fn(x)
    actual = fn(x.to(DEV))
    # Native exp, tanh, pow and reductions: within fp32 tolerance of CPU, not bit-equal.
    inexact = {"softmax", "matmul", "exp", "tanh", "transposed_exp", "pow", "sum_dim", "mean"}
    assert_same(actual, expected, exact=name not in inexact)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.bfloat16, torch.float64])
def test_fallback_dtypes(dtype: torch.dtype, eager_mode: str) -> None:
    x = make(4, 3, dtype=dtype)
    for fn in (lambda t: t + t, lambda t: t * 2, lambda t: t.max(0).values, lambda t: t.sum()):
        assert_same(fn(x.to(DEV)), fn(x))


def test_debug_mode_warns_at_each_fallback(eager_mode: str) -> None:
    a = torch.ones(3, device=DEV)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = torch.linalg.matrix_exp(a.diag())
    fallback_warnings = [w for w in caught if "has no native kernel" in str(w.message)]
    if eager_mode == "debug":
        assert len(fallback_warnings) == 1
        assert "aten::linalg_matrix_exp" in str(fallback_warnings[0].message)
        assert fallback_warnings[0].category is UserWarning
    else:
        assert fallback_warnings == []
    assert_same(b, torch.linalg.matrix_exp(a.cpu().diag()))


def test_fallback_counted() -> None:
    a = torch.ones(3, 3, device=DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    assert torch.tpu.fallback_stats() == {}
    b = torch.linalg.matrix_exp(a)
    assert torch.tpu.fallback_stats() == {"aten::linalg_matrix_exp": 1}
    b = torch.histogram(b.flatten(), 3).hist
    b = torch.histogram(b, 3).hist
    stats = torch.tpu.fallback_stats()
    assert stats["aten::histogram.bin_ct"] == 2
    assert stats["aten::linalg_matrix_exp"] == 1
    assert torch.tpu.op_stats()["fallback"] == stats
    torch.tpu.reset_op_stats()
    assert torch.tpu.fallback_stats() == {}


def test_native_ops_not_counted_as_fallback() -> None:
    x = torch.empty(4, 4, device=DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    x.fill_(2.0)
    x.zero_()
    x.copy_(torch.ones(4, 4))
    x.view(16)[::2].unsqueeze(0).expand(3, 8).transpose(0, 1)
    x.index_select(0, torch.tensor([1, 2], device=DEV))
    x.uniform_()
    x.clone()
    x.cpu()
    x.to(torch.float64)
    assert x[0, 0].item() >= 0
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}
    for op in ("fill", "copy", "index_select", "uniform"):
        assert stats["native"].get(op, 0) >= 1, (op, stats)


# ---------------------------------------------------------------------------------------------
# In-place ops through the fallback, on views


def test_inplace_on_row_view(eager_mode: str) -> None:
    cpu = torch.arange(12.0).reshape(3, 4)
    x = cpu.to(DEV)
    ptr = x.data_ptr()
    row = x[0]
    result = row.add_(1)
    assert result is row
    cpu[0].add_(1)
    assert torch.equal(x.cpu(), cpu)
    assert x.data_ptr() == ptr and row.data_ptr() == ptr


def test_inplace_on_transposed_view(eager_mode: str) -> None:
    cpu = torch.arange(12.0).reshape(3, 4)
    x = cpu.to(DEV)
    xt = x.t()
    xt.mul_(2)
    cpu.t().mul_(2)
    assert torch.equal(x.cpu(), cpu)
    assert xt.stride() == (1, 4) and xt.data_ptr() == x.data_ptr()


@pytest.mark.parametrize(
    "name",
    ["diagonal", "strided_slice", "column", "unsqueezed", "narrowed_3d"],
)
def test_inplace_on_other_views(name: str, eager_mode: str) -> None:
    views: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "diagonal": lambda t: t[0].diagonal(),
        "strided_slice": lambda t: t[:, ::2, 1::2],
        "column": lambda t: t[1, :, 2],
        "unsqueezed": lambda t: t[2].unsqueeze(0),
        "narrowed_3d": lambda t: t.narrow(2, 1, 2).transpose(0, 2),
    }
    cpu = torch.arange(48.0).reshape(3, 4, 4)
    x = cpu.to(DEV)
    v_cpu = views[name](cpu)
    v_tpu = views[name](x)
    assert v_tpu.stride() == v_cpu.stride()
    v_cpu.mul_(-1).add_(0.5).clamp_(max=10)
    v_tpu.mul_(-1).add_(0.5).clamp_(max=10)
    assert torch.equal(x.cpu(), cpu)
    assert torch.equal(v_tpu.cpu(), v_cpu)


def test_inplace_with_broadcast_operand(eager_mode: str) -> None:
    cpu = torch.arange(12.0).reshape(3, 4)
    x = cpu.to(DEV)
    x.t().sub_(torch.tensor([1.0, 2.0, 3.0], device=DEV))
    cpu.t().sub_(torch.tensor([1.0, 2.0, 3.0]))
    assert torch.equal(x.cpu(), cpu)


def test_inplace_on_overlapping_view_raises_like_cpu() -> None:
    x = torch.zeros(4, device=DEV)
    with pytest.raises(RuntimeError, match="single memory location"):
        x.expand(3, 4).add_(1)
    y = torch.arange(5.0, device=DEV)
    with pytest.raises(RuntimeError, match="single memory location"):
        y[1:].add_(y[:-1])
    assert torch.equal(x.cpu(), torch.zeros(4))
    assert torch.equal(y.cpu(), torch.arange(5.0))


def test_foreach_inplace_writes_back(eager_mode: str) -> None:
    a = torch.ones(2, device=DEV)
    b = torch.ones(3, 2, device=DEV)
    bt = b.t()
    torch._foreach_add_([a, bt], 2.0)
    assert torch.equal(a.cpu(), torch.full((2,), 3.0))
    assert torch.equal(b.cpu(), torch.full((3, 2), 3.0))
    outs = torch._foreach_mul([a, b], 2.0)
    assert [o.device.type for o in outs] == ["tpu", "tpu"]
    assert torch.equal(outs[1].cpu(), torch.full((3, 2), 6.0))


# ---------------------------------------------------------------------------------------------
# out= variants


def test_out_on_tpu(eager_mode: str) -> None:
    a, b = make(3, 4, seed=1), make(3, 4, seed=2)
    c = torch.empty(3, 4, device=DEV)
    ptr = c.data_ptr()
    r = torch.add(a.to(DEV), b.to(DEV), out=c)
    assert r is c and c.data_ptr() == ptr
    assert_same(c, a + b)


def test_out_wrong_shape_is_resized(eager_mode: str) -> None:
    a = make(3, 4)
    c = torch.empty(2, device=DEV)
    with pytest.warns(UserWarning, match="resized"):
        torch.add(a.to(DEV), a.to(DEV), out=c)
    assert_same(c, a + a)
    # An empty out is resized without a warning, as on CPU.
    d = torch.empty(0, device=DEV)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.mul(a.to(DEV), 2, out=d)
    assert_same(d, a * 2)


def test_out_view_writes_into_base(eager_mode: str) -> None:
    a = make(4, 3)
    base = torch.zeros(3, 4, device=DEV)
    torch.mul(a.to(DEV), 2, out=base.t())
    assert torch.equal(base.cpu(), (a * 2).t())
    row = torch.zeros(3, 4, device=DEV)
    torch.add(a[0].to(DEV), 1, out=row[1, :3])
    expected = torch.zeros(3, 4)
    expected[1, :3] = a[0] + 1
    assert torch.equal(row.cpu(), expected)


def test_out_errors_like_cpu() -> None:
    a = torch.ones(3, device=DEV)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.add(a, a, out=torch.empty(3, dtype=torch.long, device=DEV))
    with pytest.raises(RuntimeError, match="device"):
        torch.add(a, a, out=torch.empty(3))


def test_out_partial_overlap_raises() -> None:
    z = torch.arange(5.0, device=DEV)
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.add(z[:3], 1, out=z[1:4])


# ---------------------------------------------------------------------------------------------
# Multiple outputs


def test_max_dim_two_outputs(eager_mode: str) -> None:
    x = make(4, 5)
    values, indices = torch.max(x.to(DEV), dim=1)
    ev, ei = torch.max(x, dim=1)
    assert_same(values, ev)
    assert_same(indices, ei)
    v = torch.empty(0, device=DEV)
    i = torch.empty(0, dtype=torch.long, device=DEV)
    r = torch.max(x.to(DEV), 1, keepdim=True, out=(v, i))
    assert r.values is v and r.indices is i
    assert_same(v, torch.max(x, 1, keepdim=True).values)


def test_sort_and_topk(eager_mode: str) -> None:
    x = make(3, 7)
    for fn in (
        lambda t: torch.sort(t, dim=1, descending=True),
        lambda t: torch.sort(t.t(), dim=0, stable=True),
        lambda t: torch.topk(t, 3),
        lambda t: torch.aminmax(t, dim=0),
        lambda t: torch.std_mean(t, dim=1),
    ):
        got = fn(x.to(DEV))
        exp = fn(x)
        assert type(got) is type(exp)
        for g, e in zip(got, exp, strict=True):
            assert_same(g, e, exact=False)


def test_non_tensor_results(eager_mode: str) -> None:
    a = make(3, 3).to(DEV)
    assert torch.equal(a, a) is True
    assert torch.equal(a, a + 1) is False
    assert torch.allclose(a, a.clone())
    assert isinstance(a.sum().item(), float)


# ---------------------------------------------------------------------------------------------
# Mixing devices, as on CUDA


def test_cpu_scalar_tensor_is_a_scalar(eager_mode: str) -> None:
    x = make(3, 4)
    t = x.to(DEV)
    for fn in (
        lambda a: a + torch.tensor(2.0),
        lambda a: torch.tensor(2.0) * a,
        lambda a: torch.where(a > 0, a, torch.tensor(0.0)),
        lambda a: a.add_(torch.tensor(1.5)) if a.device.type == "tpu" else a.add_(1.5),
    ):
        assert_same(fn(t), fn(x))


@pytest.mark.parametrize(
    "op",
    [
        lambda a: a + torch.ones(4),
        lambda a: torch.ones(4) + a,
        lambda a: torch.mm(a, torch.ones(4, 2)),
        lambda a: a.add_(torch.ones(4)),
        lambda a: torch.cat([a, torch.ones(3, 4)]),
        lambda a: torch.ones(4) + a[0, 0],  # 0-dim tpu tensor with a CPU tensor
    ],
    ids=["add", "radd", "mm", "add_", "cat", "tpu_scalar_with_cpu"],
)
def test_cpu_tensor_with_tpu_tensor_raises(op: Callable[[torch.Tensor], torch.Tensor]) -> None:
    a = torch.ones(3, 4, device=DEV)
    with pytest.raises(RuntimeError, match=r"(?s)same device.*(tpu:0.*cpu|cpu.*tpu:0)"):
        op(a)
    assert torch.equal(a.cpu(), torch.ones(3, 4))


def test_index_with_cpu_indices(eager_mode: str) -> None:
    x = make(4, 5)
    t = x.to(DEV)
    idx = torch.tensor([0, 3, 1])
    mask = torch.tensor([True, False, True, True])
    for fn in (
        lambda a: a[idx],
        lambda a: a[mask],
        lambda a: a[idx, torch.tensor([1, 2, 4])],
        lambda a: a[:, idx],
        lambda a: a[idx.to(a.device)],
        lambda a: a[a > 0],
    ):
        assert_same(fn(t), fn(x))


def test_index_put_with_cpu_indices(eager_mode: str) -> None:
    x = make(4, 5)
    t = x.to(DEV)
    idx = torch.tensor([0, 2])
    x[idx] = 5.0
    t[idx] = 5.0
    x[torch.tensor([True, False, False, True])] = torch.tensor(-1.0)
    t[torch.tensor([True, False, False, True])] = torch.tensor(-1.0)
    x.index_put_((idx, torch.tensor([1, 1])), torch.tensor(3.0), accumulate=True)
    t.index_put_((idx, torch.tensor([1, 1])), torch.tensor(3.0), accumulate=True)
    assert torch.equal(t.cpu(), x)


# ---------------------------------------------------------------------------------------------
# Random ops that fall back follow torch.tpu's generator


@pytest.mark.parametrize(
    "op",
    [
        lambda: torch.bernoulli(torch.full((64,), 0.5, device=DEV)),
        lambda: torch.randperm(40, device=DEV),
        lambda: torch.multinomial(torch.ones(10, device=DEV), 5),
    ],
    ids=["bernoulli", "randperm", "multinomial"],
)
def test_random_fallback_reproducible(op: Callable[[], torch.Tensor], eager_mode: str) -> None:
    torch.tpu.manual_seed(5)
    a = op()
    torch.tpu.manual_seed(5)
    torch.rand(3)  # the CPU generator must not matter
    b = op()
    assert torch.equal(a.cpu(), b.cpu())


def test_dropout_fallback_reproducible(eager_mode: str) -> None:
    x = torch.ones(256, device=DEV)
    torch.tpu.manual_seed(5)
    a = torch.nn.functional.dropout(x, 0.5)
    torch.tpu.manual_seed(5)
    torch.rand(3)
    assert torch.equal(a.cpu(), torch.nn.functional.dropout(x, 0.5).cpu())


# ---------------------------------------------------------------------------------------------
# Sparse tensors are not supported: NotImplementedError naming the op


@pytest.mark.parametrize(
    "make_sparse, op_name",
    [
        (lambda: torch.ones(3, 3, device=DEV).to_sparse(), "aten::_to_sparse"),
        (lambda: torch.ones(3, 3, device=DEV).to_sparse_csr(), "aten::_to_sparse_csr"),
        (
            lambda: torch.sparse_coo_tensor(
                torch.tensor([[0, 1]]), torch.tensor([1.0, 2.0]), (3,), device=DEV
            ),
            "aten::_sparse_coo_tensor_with_dims_and_tensors",
        ),
        (
            lambda: torch.sparse_coo_tensor(
                torch.tensor([[0, 1]], device=DEV), torch.tensor([1.0, 2.0], device=DEV), (3,)
            ),
            "aten::_sparse_coo_tensor_with_dims_and_tensors",
        ),
        (lambda: torch.zeros(3, layout=torch.sparse_coo, device=DEV), "aten::"),
        (lambda: torch.ones(2, 2).to_sparse().to(DEV), "aten::"),
    ],
    ids=["to_sparse", "to_sparse_csr", "coo_cpu_parts", "coo_tpu_parts", "zeros", "move"],
)
def test_sparse_raises_not_implemented(make_sparse: Callable[[], object], op_name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sparse beta/invariant warnings
        with pytest.raises(NotImplementedError, match=op_name):
            make_sparse()
    # The process stays usable.
    assert torch.equal((torch.ones(2, device=DEV) + 1).cpu(), torch.full((2,), 2.0))


# ---------------------------------------------------------------------------------------------
# TORCH_TPU_CPU_FALLBACK=0

NO_FALLBACK = """
import torch
x = torch.ones(2, 3, device="tpu")          # empty + fill: native
x.fill_(2.0)
x.copy_(torch.arange(6.0).reshape(2, 3))    # copy: native
y = x.t().contiguous()                      # view + copy: native
z = x.index_select(1, torch.tensor([2, 0], device="tpu"))
torch.rand(3, device="tpu")
assert x.cpu().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], x.cpu()
assert y.cpu().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
assert z.cpu().tolist() == [[2.0, 0.0], [5.0, 3.0]]
assert x[1, 2].item() == 5.0
for name, fn in [("aten::linalg_matrix_exp", lambda: torch.linalg.matrix_exp(x[:, :2])),
                 ("aten::_fft_r2c", lambda: torch.fft.rfft(x)),
                 ("aten::histogram", lambda: torch.histogram(x, 3)),
                 ("aten::_linalg_svd", lambda: torch.linalg.svdvals(x))]:
    try:
        fn()
    except NotImplementedError as e:
        assert name in str(e), (name, str(e))
        assert "TORCH_TPU_CPU_FALLBACK" in str(e), str(e)
        print("raised", name)
    else:
        print("no error", name)
assert torch.tpu.fallback_stats() == {}, torch.tpu.fallback_stats()
assert x.cpu().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
print("done")
"""


def test_cpu_fallback_off_raises_not_implemented() -> None:
    result = run_python(NO_FALLBACK, {"TORCH_TPU_CPU_FALLBACK": "0"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.split("\n")
    for name in (
        "aten::linalg_matrix_exp",
        "aten::_fft_r2c",
        "aten::histogram",
        "aten::_linalg_svd",
    ):
        assert f"raised {name}" in lines
    assert "done" in lines


# ---------------------------------------------------------------------------------------------
# No view op reaches the fallback

# Views that exist only for sparse or nested tensors: they never see a dense tpu tensor (sparse
# tpu tensors are refused earlier, nested ones are not supported).
VIEW_EXEMPT = {
    "aten::_indices": "sparse only",
    "aten::_values": "sparse only",
    "aten::_sparse_broadcast_to": "sparse only",
    "aten::_nested_view_from_buffer": "nested tensors",
    "aten::_nested_view_from_jagged": "nested tensors",
    "aten::_nested_get_values": "nested tensors",
}

VIEW_KERNEL_KEYS = (
    "PrivateUse1",
    "CompositeImplicitAutograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
)


def view_ops() -> list[str]:
    """Every ATen op whose schema returns an immutable alias of an input."""
    found = []
    for name in sorted(torch._C._dispatch_get_all_op_names()):
        if not name.startswith("aten::"):
            continue
        base, _, overload = name.partition(".")
        try:
            schema = torch._C._get_schema(base, overload)
        except RuntimeError:
            continue
        if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
            found.append(name)
    return found


def test_view_op_scan_finds_views() -> None:
    views = view_ops()
    for name in ("aten::view", "aten::transpose.int", "aten::as_strided", "aten::split.Tensor"):
        assert name in views
    for name in ("aten::add.Tensor", "aten::add_.Tensor", "aten::add.out", "aten::copy_"):
        assert name not in views
    assert len(views) > 50


def test_no_view_op_reaches_fallback() -> None:
    missing = []
    for name in view_ops():
        if name in VIEW_EXEMPT:
            continue
        if not any(
            torch._C._dispatch_has_kernel_for_dispatch_key(name, key) for key in VIEW_KERNEL_KEYS
        ):
            missing.append(name)
    assert missing == [], f"view ops that would reach the tpu CPU fallback: {missing}"


def test_view_exemptions_still_needed() -> None:
    # An exempt op that gains a dense kernel must be removed from the exemptions and checked.
    views = set(view_ops())
    for name in VIEW_EXEMPT:
        assert name in views, f"{name} is no longer a view op"
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA"), name
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"), name


VIEW_CALLS: dict[str, Callable[[torch.Tensor], torch.Tensor | tuple[torch.Tensor, ...]]] = {
    "view": lambda t: t.view(6, 4),
    "reshape": lambda t: t.reshape(4, 6),
    "t": lambda t: t[0].t(),
    "transpose": lambda t: t.transpose(0, 2),
    "permute": lambda t: t.permute(2, 0, 1),
    "select": lambda t: t[1],
    "slice": lambda t: t[:, 1:3, ::2],
    "narrow": lambda t: t.narrow(2, 1, 2),
    "diagonal": lambda t: t.diagonal(0, 1, 2),
    "expand": lambda t: t[:, :1].expand(2, 5, 4),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "squeeze": lambda t: t[:, :1].squeeze(1),
    "flatten": lambda t: t.flatten(),
    "unflatten": lambda t: t.unflatten(2, (2, 2)),
    "movedim": lambda t: t.movedim(0, 2),
    "unbind": lambda t: t.unbind(1),
    "split": lambda t: t.split(2, dim=2),
    "chunk": lambda t: t.chunk(3, dim=1),
    "unfold": lambda t: t.unfold(2, 2, 1),
    "as_strided": lambda t: t.as_strided((3, 3), (1, 4), 2),
    "alias": lambda t: torch.ops.aten.alias(t),
    "detach": lambda t: t.detach(),
    "view_as": lambda t: t.view_as(torch.empty(24)),
    "view_dtype": lambda t: t.view(torch.int32),
    "real_imag": lambda t: (torch.view_as_complex(t.reshape(12, 2)).real,),
    "view_as_real": lambda t: torch.view_as_real(torch.view_as_complex(t.reshape(12, 2))),
    "swapaxes": lambda t: t.swapaxes(0, 1),
    "mT": lambda t: t.mT,
    "indices_basic": lambda t: t[None, ..., 1],
}


@pytest.mark.parametrize("name", list(VIEW_CALLS))
def test_view_ops_alias_without_fallback(name: str) -> None:
    base_cpu = torch.arange(24.0).reshape(2, 3, 4)
    base = base_cpu.to(DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    out = VIEW_CALLS[name](base)
    outs = out if isinstance(out, tuple) else (out,)
    assert torch.tpu.fallback_stats() == {}
    expected = VIEW_CALLS[name](base_cpu)
    expected_outs = expected if isinstance(expected, tuple) else (expected,)
    for o, e in zip(outs, expected_outs, strict=True):
        assert o.device.type == "tpu"
        assert o.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
        assert o.shape == e.shape and o.stride() == e.stride() and o.dtype == e.dtype
        assert o.storage_offset() == e.storage_offset()
        assert torch.equal(o.cpu(), e)


# ---------------------------------------------------------------------------------------------
# Common nn ops reach the CPU kernels through the fallback, without extra warnings


NN_OPS: dict[str, Callable[[str], torch.Tensor | tuple[torch.Tensor, ...]]] = {
    "conv2d": lambda d: torch.nn.functional.conv2d(
        make(1, 2, 6, 6).to(d), make(3, 2, 3, 3, seed=1).to(d), padding=1
    ),
    "conv1d": lambda d: torch.nn.functional.conv1d(make(1, 2, 7).to(d), make(3, 2, 3).to(d)),
    "conv_transpose2d": lambda d: torch.nn.functional.conv_transpose2d(
        make(1, 3, 4, 4).to(d), make(3, 2, 3, 3).to(d)
    ),
    "lstm": lambda d: torch.nn.LSTM(3, 4).to(d)(make(2, 1, 3).to(d))[0],
    "gru": lambda d: torch.nn.GRU(3, 4).to(d)(make(2, 1, 3).to(d))[0],
    "mse_loss": lambda d: torch.nn.functional.mse_loss(make(5).to(d), make(5, seed=1).to(d)),
    "smooth_l1_loss": lambda d: torch.nn.functional.smooth_l1_loss(
        make(5).to(d), make(5, seed=1).to(d)
    ),
    "max_pool2d": lambda d: torch.nn.functional.max_pool2d(make(1, 2, 6, 6).to(d), 2),
    "batch_norm": lambda d: torch.nn.functional.batch_norm(
        make(4, 3, 5).to(d), torch.zeros(3, device=d), torch.ones(3, device=d), training=True
    ),
    "layer_norm": lambda d: torch.nn.functional.layer_norm(make(3, 8).to(d), (8,)),
    "embedding": lambda d: torch.nn.functional.embedding(
        torch.tensor([[1, 3], [0, 3]], device=d), make(4, 5).to(d)
    ),
    "cross_entropy": lambda d: torch.nn.functional.cross_entropy(
        make(4, 5).to(d), torch.tensor([1, 0, 4, 2], device=d)
    ),
    "sdpa": lambda d: torch.nn.functional.scaled_dot_product_attention(
        make(1, 2, 4, 8).to(d), make(1, 2, 4, 8, seed=1).to(d), make(1, 2, 4, 8, seed=2).to(d)
    ),
    "interpolate": lambda d: torch.nn.functional.interpolate(
        make(1, 2, 3, 3).to(d), scale_factor=2, mode="bilinear"
    ),
    "l1_loss": lambda d: torch.nn.functional.l1_loss(make(5).to(d), make(5, seed=1).to(d)),
}


@pytest.mark.parametrize("name", list(NN_OPS))
def test_nn_ops_match_cpu(name: str) -> None:
    fn = NN_OPS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.manual_seed(0)
        expected = fn("cpu")
        torch.manual_seed(0)
        actual = fn(DEV)
    exp = expected if isinstance(expected, tuple) else (expected,)
    act = actual if isinstance(actual, tuple) else (actual,)
    for a, e in zip(act, exp, strict=True):
        assert a.device.type == "tpu" and a.dtype == e.dtype and a.shape == e.shape
        torch.testing.assert_close(a.detach().cpu(), e.detach(), rtol=1e-5, atol=1e-5)
