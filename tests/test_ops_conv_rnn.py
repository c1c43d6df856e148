"""The fused LSTM and GRU cells on tpu: nn.LSTM / nn.GRU / nn.LSTMCell / nn.GRUCell forward and
backward against PyTorch CPU in both eager modes (whose CPU path computes the same cells with
unfused ops), and the cell ops called directly against the formulas, with CUDA's workspace
layouts; native execution and errors."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from _index_checks import DEV, FLOATS, assert_same, native_only

TOL = {
    torch.float32: {"rtol": 1e-5, "atol": 1e-5},
    torch.float64: {"rtol": 1e-10, "atol": 1e-10},
    torch.bfloat16: {"rtol": 3e-2, "atol": 3e-2},
    torch.float16: {"rtol": 3e-3, "atol": 3e-3},
}


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def cell_ops_fell_back() -> dict[str, int]:
    return {k: v for k, v in torch.tpu.fallback_stats().items() if "_thnn_fused" in k}


def run_module(module_cpu: torch.nn.Module, x: torch.Tensor, dtype: torch.dtype) -> None:
    module_cpu = module_cpu.to(dtype)
    module_dev = copy.deepcopy(module_cpu).to(DEV)
    xc = x.to(dtype).clone().requires_grad_()
    xd = x.to(dtype).to(DEV).requires_grad_()
    out = module_cpu(xc)
    y = out[0] if isinstance(out, tuple) else out
    g = randn(*y.shape, dtype=dtype, seed=7)
    y.backward(g)
    torch.tpu.reset_op_stats()
    out_d = module_dev(xd)
    y_d = out_d[0] if isinstance(out_d, tuple) else out_d
    y_d.backward(g.to(DEV))
    torch.tpu.synchronize()
    assert not cell_ops_fell_back()
    assert (
        torch.tpu.op_stats()["native"].get(
            "lstm_cell" if "LSTM" in type(module_cpu).__name__ else "gru_cell", 0
        )
        > 0
    )
    tol = TOL[dtype]
    assert_same(y_d, y.detach(), exact=False, **tol)
    assert_same(xd.grad, xc.grad, exact=False, **tol)
    for p_d, p_c in zip(module_dev.parameters(), module_cpu.parameters(), strict=True):
        assert_same(p_d.grad, p_c.grad, exact=False, **tol)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_layers(eager_mode: str, kind: str, dtype: torch.dtype, bias: bool) -> None:
    torch.manual_seed(0)
    module = getattr(torch.nn, kind)(8, 6, num_layers=2, bias=bias)
    run_module(module, randn(5, 3, 8, seed=1), dtype)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_rnn_whole_sequence(
    eager_mode: str, kind: str, bias: bool, bidirectional: bool, batch_first: bool
) -> None:
    """nn.LSTM's and nn.GRU's layers as whole-sequence nodes: outputs, final states and every
    gradient (input, initial states, weights) match CPU, with one fused cell per step."""
    if os.environ.get("TORCH_TPU_DRIVER") == "pjrt" and (batch_first or not bias):
        # The layout and the bias are the binding's business, the same ops on either driver;
        # each case compiles an executable per step on PJRT (a view's offset is in its key).
        pytest.skip("layouts and bias-free layers run on the host driver only")
    torch.manual_seed(0)
    steps, batch, layers, dirs = 7, 3, 2, 2 if bidirectional else 1
    lstm = kind == "LSTM"
    rnn_cpu = getattr(torch.nn, kind)(
        5, 6, layers, bias, batch_first, dropout=0.5, bidirectional=bidirectional
    ).eval()
    rnn_dev = copy.deepcopy(rnn_cpu).to(DEV)
    shape = (batch, steps, 5) if batch_first else (steps, batch, 5)
    states = (layers * dirs, batch, 6)
    inputs = [randn(*shape, seed=1)] + [randn(*states, seed=2 + i) for i in range(1 + lstm)]
    leaves_cpu = [t.clone().requires_grad_() for t in inputs]
    leaves_dev = [t.to(DEV).requires_grad_() for t in inputs]
    out_shape = (batch, steps, 6 * dirs) if batch_first else (steps, batch, 6 * dirs)
    weights = [randn(*out_shape, seed=4)] + [randn(*states, seed=5 + i) for i in range(1 + lstm)]

    def run(module: torch.nn.Module, leaves: list[torch.Tensor]) -> list[torch.Tensor]:
        out, final = module(leaves[0], tuple(leaves[1:]) if lstm else leaves[1])
        return [out, *(final if lstm else (final,))]

    def loss(results: list[torch.Tensor], dev: str) -> torch.Tensor:
        return sum((t * w.to(dev)).sum() for t, w in zip(results, weights, strict=True))

    want = run(rnn_cpu, leaves_cpu)
    loss(want, "cpu").backward()
    torch.tpu.reset_op_stats()
    got = run(rnn_dev, leaves_dev)
    loss(got, DEV).backward()
    torch.tpu.synchronize()
    native = torch.tpu.op_stats()["native"]
    cell = "lstm_cell" if lstm else "gru_cell"
    assert native[cell] == native[cell + "_backward"] == steps * layers * dirs
    tol = TOL[torch.float32]
    assert_same(got, [t.detach() for t in want], exact=False, **tol)
    for d, c in zip(leaves_dev, leaves_cpu, strict=True):
        assert_same(d.grad, c.grad, exact=False, **tol)
    for p_d, p_c in zip(rnn_dev.parameters(), rnn_cpu.parameters(), strict=True):
        assert_same(p_d.grad, p_c.grad, exact=False, **tol)
    # without autograd (inference mode dispatches below it) the outputs are the same; each step
    # runs one GEMM (ATen's generic path: two), after one GEMM for each layer's inputs
    torch.tpu.reset_op_stats()
    with torch.inference_mode():
        out_inf = run(rnn_dev, [t.detach() for t in leaves_dev])
    torch.tpu.synchronize()
    native = torch.tpu.op_stats()["native"]
    gemms = native.get("mm", 0) + native.get("addmm", 0)
    assert gemms == (steps + 1) * layers * dirs
    assert_same(out_inf, [t.detach() for t in want], exact=False, **tol)


def test_rnn_projections_and_packed_sequences_take_atens_path(eager_mode: str) -> None:
    torch.manual_seed(0)
    run_module(torch.nn.LSTM(5, 6, proj_size=4), randn(4, 3, 5, seed=1), torch.float32)
    lstm_cpu = torch.nn.LSTM(5, 6)
    lstm_dev = copy.deepcopy(lstm_cpu).to(DEV)
    x = randn(4, 3, 5, seed=2)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, [4, 3, 1])
    out_cpu = torch.nn.utils.rnn.pad_packed_sequence(lstm_cpu(packed)[0])[0]
    packed_dev = torch.nn.utils.rnn.pack_padded_sequence(x.to(DEV), [4, 3, 1])
    out_dev = torch.nn.utils.rnn.pad_packed_sequence(lstm_dev(packed_dev)[0])[0]
    assert_same(out_dev, out_cpu.detach(), exact=False, **TOL[torch.float32])
    # states of the wrong size take ATen's path, whose cells raise (PyTorch CPU's oneDNN path
    # aborts the process on this call)
    params = list(lstm_dev.parameters())
    wrong = torch.zeros(1, 2, 6, device=DEV)
    with pytest.raises(RuntimeError, match="expected gates of size"):
        torch.lstm(x.to(DEV), (wrong, wrong), params, True, 1, 0.0, False, False, False)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_rnn_cells_modules(eager_mode: str, kind: str) -> None:
    torch.manual_seed(0)
    run_module(getattr(torch.nn, kind)(5, 4), randn(3, 5, seed=1), torch.float32)


def sig(v: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(v)


def lstm_reference(ig, hg, cx, ib, hb):
    gates = ig.double() + hg.double()
    if ib is not None:
        gates = gates + ib.double() + hb.double()
    i, f, c, o = gates.chunk(4, 1)
    i, f, c, o = sig(i), sig(f), c.tanh(), sig(o)
    cy = f * cx.double() + i * c
    return o * cy.tanh(), cy, torch.cat([i, f, c, o], 1)


def gru_reference(ig, hg, hx, ib, hb):
    ig, hg = ig.double(), hg.double()
    if ib is not None:
        ig, hg = ig + ib.double(), hg + hb.double()
    ir, iz, i_n = ig.chunk(3, 1)
    hr, hz, h_n = hg.chunk(3, 1)
    r, z = sig(ir + hr), sig(iz + hz)
    n = (i_n + r * h_n).tanh()
    hy = n + z * (hx.double() - n)
    return hy, torch.cat([r, z, n, hx.double(), h_n], 1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bias", [True, False])
def test_fused_lstm_cell_direct(eager_mode: str, dtype: torch.dtype, bias: bool) -> None:
    b, h = 3, 4
    ig, hg = randn(b, 4 * h, dtype=dtype, seed=1), randn(b, 4 * h, dtype=dtype, seed=2)
    cx = randn(b, h, dtype=dtype, seed=3)
    ib = randn(4 * h, dtype=dtype, seed=4) if bias else None
    hb = randn(4 * h, dtype=dtype, seed=5) if bias else None
    dev = [t.to(DEV) if t is not None else None for t in (ig, hg, cx, ib, hb)]
    with native_only():
        hy, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(*dev)
    want = lstm_reference(ig, hg, cx, ib, hb)
    for got, ref in zip((hy, cy, ws), want, strict=True):
        assert got.dtype == dtype and got.is_contiguous()
        torch.testing.assert_close(got.cpu(), ref.to(dtype), **TOL[dtype])
    # backward, with and without each output gradient, against autograd of the reference
    ghy, gcy = randn(b, h, dtype=dtype, seed=6), randn(b, h, dtype=dtype, seed=7)
    for with_hy, with_cy in ((True, True), (True, False), (False, True)):
        igr = (ig.double() + hg.double()).requires_grad_()
        cxr = cx.double().clone().requires_grad_()
        hyr, cyr, _ = lstm_reference(
            igr,
            torch.zeros_like(igr),
            cxr,
            ib.double() + hb.double() if bias else None,
            torch.zeros(4 * h, dtype=torch.float64) if bias else None,
        )
        loss = (hyr * ghy.double()).sum() * with_hy + (cyr * gcy.double()).sum() * with_cy
        loss.backward()
        with native_only():
            gg, gcx, gb = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(
                ghy.to(DEV) if with_hy else None,
                gcy.to(DEV) if with_cy else None,
                dev[2],
                cy,
                ws,
                bias,
            )
        torch.testing.assert_close(gg.cpu(), igr.grad.to(dtype), **TOL[dtype])
        torch.testing.assert_close(gcx.cpu(), cxr.grad.to(dtype), **TOL[dtype])
        assert (gb is None) != bias
        if bias:
            torch.testing.assert_close(gb.cpu(), gg.cpu().double().sum(0).to(dtype), **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bias", [True, False])
def test_fused_gru_cell_direct(eager_mode: str, dtype: torch.dtype, bias: bool) -> None:
    b, h = 3, 4
    ig, hg = randn(b, 3 * h, dtype=dtype, seed=1), randn(b, 3 * h, dtype=dtype, seed=2)
    hx = randn(b, h, dtype=dtype, seed=3)
    ib = randn(3 * h, dtype=dtype, seed=4) if bias else None
    hb = randn(3 * h, dtype=dtype, seed=5) if bias else None
    dev = [t.to(DEV) if t is not None else None for t in (ig, hg, hx, ib, hb)]
    with native_only():
        hy, ws = torch.ops.aten._thnn_fused_gru_cell(*dev)
    want = gru_reference(ig, hg, hx, ib, hb)
    for got, ref in zip((hy, ws), want, strict=True):
        torch.testing.assert_close(got.cpu(), ref.to(dtype), **TOL[dtype])
    ghy = randn(b, h, dtype=dtype, seed=6)
    igr = ig.double().clone().requires_grad_()
    hgr = hg.double().clone().requires_grad_()
    hxr = hx.double().clone().requires_grad_()
    hyr, _ = gru_reference(igr, hgr, hxr, ib, hb)
    (hyr * ghy.double()).sum().backward()
    with native_only():
        grads = torch.ops.aten._thnn_fused_gru_cell_backward(ghy.to(DEV), ws, bias)
    for got, ref in zip(grads[:3], (igr.grad, hgr.grad, hxr.grad), strict=True):
        torch.testing.assert_close(got.cpu(), ref.to(dtype), **TOL[dtype])
    if bias:
        torch.testing.assert_close(grads[3].cpu(), igr.grad.sum(0).to(dtype), **TOL[dtype])
        torch.testing.assert_close(grads[4].cpu(), hgr.grad.sum(0).to(dtype), **TOL[dtype])
    else:
        assert grads[3] is None and grads[4] is None


def laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """t on tpu: contiguous, as rows padded apart (the float32 rows' kernels), or with a column
    stride of 2 (the general kernels)."""
    if layout == "dense":
        return t.to(DEV)
    pad = layout == "row_padded"
    wide = torch.zeros(t.shape[0], t.shape[1] + 3 if pad else 2 * t.shape[1], dtype=t.dtype)
    if pad:
        wide[:, 3:] = t
        return wide.to(DEV)[:, 3:]
    wide[:, ::2] = t
    return wide.to(DEV)[:, ::2]


@pytest.mark.parametrize("layout", ["dense", "row_padded", "column_strided"])
def test_fused_cells_float32_rows(eager_mode: str, layout: str) -> None:
    """Rows longer than a vector (vector body and tail), saturating and special gate values."""
    b, h = 5, 37
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 40.0, -40.0, 0.0, -0.0])
    ig, hg = randn(b, 4 * h, seed=1) * 4, randn(b, 4 * h, seed=2)
    ig[0, : special.numel()] = special
    ig[1, 2 * h : 2 * h + special.numel()] = special
    cx, ib, hb = randn(b, h, seed=3), randn(4 * h, seed=4), randn(4 * h, seed=5)
    args = [laid_out(ig, layout), laid_out(hg, layout), laid_out(cx, layout)]
    with native_only():
        got = torch.ops.aten._thnn_fused_lstm_cell(*args, ib.to(DEV), hb.to(DEV))
    for g, ref in zip(got, lstm_reference(ig, hg, cx, ib, hb), strict=True):
        torch.testing.assert_close(g.cpu(), ref.float(), equal_nan=True, **TOL[torch.float32])
    # backward on finite values
    hy, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(*(t.to(DEV) for t in (hg, hg, cx)))
    ghy, gcy = randn(b, h, seed=6), randn(b, h, seed=7)
    with native_only():
        gg, gcx, gb = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(
            laid_out(ghy, layout), laid_out(gcy, layout), laid_out(cx, layout), cy, ws, True
        )
    gr = (hg.double() * 2).requires_grad_()
    cxr = cx.double().requires_grad_()
    hyr, cyr, _ = lstm_reference(gr, torch.zeros_like(gr), cxr, None, None)
    ((hyr * ghy.double()).sum() + (cyr * gcy.double()).sum()).backward()
    torch.testing.assert_close(gg.cpu(), gr.grad.float(), **TOL[torch.float32])
    torch.testing.assert_close(gcx.cpu(), cxr.grad.float(), **TOL[torch.float32])
    torch.testing.assert_close(gb.cpu(), gr.grad.sum(0).float(), **TOL[torch.float32])
    # the GRU cell, forward with special values and backward
    ig3, hg3 = ig[:, : 3 * h], hg[:, : 3 * h]
    with native_only():
        hy3, ws3 = torch.ops.aten._thnn_fused_gru_cell(
            laid_out(ig3, layout), laid_out(hg3, layout), laid_out(cx, layout)
        )
    for g, ref in zip((hy3, ws3), gru_reference(ig3, hg3, cx, None, None), strict=True):
        torch.testing.assert_close(g.cpu(), ref.float(), equal_nan=True, **TOL[torch.float32])
    _, ws3 = torch.ops.aten._thnn_fused_gru_cell(hg3.to(DEV), hg3.to(DEV), cx.to(DEV))
    with native_only():
        grads = torch.ops.aten._thnn_fused_gru_cell_backward(laid_out(ghy, layout), ws3, True)
    igr, hgr = hg3.double().requires_grad_(), hg3.double().requires_grad_()
    hyr, _ = gru_reference(igr, hgr, cx, None, None)
    (hyr * ghy.double()).sum().backward()
    refs = (igr.grad, hgr.grad, igr.grad.sum(0), hgr.grad.sum(0))
    for g, ref in zip(grads[:2] + grads[3:], refs, strict=True):
        torch.testing.assert_close(g.cpu(), ref.float(), **TOL[torch.float32])


def test_fused_cell_errors() -> None:
    ig = torch.randn(2, 8, device=DEV)
    cx = torch.randn(2, 2, device=DEV)
    with pytest.raises(NotImplementedError):
        torch.ops.aten._thnn_fused_lstm_cell(ig.long(), ig.long(), cx.long())
    with pytest.raises(RuntimeError, match="dtype"):
        torch.ops.aten._thnn_fused_lstm_cell(ig, ig.double(), cx)
    with pytest.raises(RuntimeError, match="gates"):
        torch.ops.aten._thnn_fused_lstm_cell(ig[:, :6], ig[:, :6], cx)
