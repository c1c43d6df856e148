"""scaled_dot_product_attention's gradients on tpu (the fused backward kernel) against PyTorch
CPU: wrt q, k and v for every fused dtype, causal or not, with masks, rows that see no key,
L != S, GQA, transposed inputs; the additive mask's own gradient; the backward op called
directly (layout against PyTorch's meta); and a transformer block trained on tpu."""

from __future__ import annotations

import pytest
import torch
from _attention_checks import DEV, FUSED_BACKWARD, close, counted, qkv, rand, run_both, sdpa

BACKWARD = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward
FORWARD = torch.ops.aten._scaled_dot_product_fused_attention_overrideable


def big_strides(t: torch.Tensor) -> list[int]:
    return [st for st, n in zip(t.stride(), t.shape, strict=True) if n > 1]


def check_grads(got: list[torch.Tensor | None], want: list[torch.Tensor | None]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g is not None and w is not None
        close(g, w)
        # Strides of size-1 dimensions are arbitrary (CPU's kernels and PyTorch's meta differ).
        assert big_strides(g) == big_strides(w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lq,s", [(70, 70), (40, 150), (150, 40)])
def test_grads_match_cpu(
    eager_mode: str, dtype: torch.dtype, causal: bool, lq: int, s: int
) -> None:
    got, want, g_dev, g_cpu = run_both(
        lambda q, k, v: sdpa(q, k, v, is_causal=causal),
        qkv(2, 2, 2, lq, s, 16, dtype=dtype),
        grad=True,
    )
    close(got, want)
    check_grads(g_dev, g_cpu)


@pytest.mark.parametrize("kind", ["additive", "bool"])
@pytest.mark.parametrize("shape", [(30, 50), (2, 1, 30, 50), (1, 3, 1, 50)])
def test_grads_with_masks(eager_mode: str, kind: str, shape: tuple[int, ...]) -> None:
    keep = rand(*shape, seed=5) > -0.8
    if shape[-2] > 4:
        keep[..., 4, :] = False  # a row that sees no key
    mask = keep if kind == "bool" else rand(*shape, seed=6).masked_fill(~keep, float("-inf"))
    got, want, g_dev, g_cpu = run_both(
        lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), (*qkv(2, 3, 3, 30, 50, 8), mask), grad=True
    )
    close(got, want)
    check_grads(g_dev[:3], g_cpu[:3])


@pytest.mark.parametrize("hq,hkv", [(6, 2), (4, 1)])
def test_grads_grouped_query_attention(eager_mode: str, hq: int, hkv: int) -> None:
    got, want, g_dev, g_cpu = run_both(
        lambda q, k, v: sdpa(q, k, v, is_causal=True, enable_gqa=True),
        qkv(2, hq, hkv, 40, 40, 16),
        grad=True,
    )
    close(got, want)
    check_grads(g_dev, g_cpu)


def test_grads_transposed_inputs_and_large_head_dim(eager_mode: str) -> None:
    x = rand(2, 70, 3 * 2 * 128)

    def fn(x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.view(2, 70, 2, 128).transpose(1, 2) for t in x.split(256, dim=2))
        return sdpa(q, k, v, is_causal=True)

    got, want, g_dev, g_cpu = run_both(fn, (x,), grad=True)
    close(got, want)
    check_grads(g_dev, g_cpu)


@pytest.mark.parametrize("shape", [(30, 50), (1, 3, 30, 50), (2, 3, 30, 50)])
def test_additive_mask_gradient(eager_mode: str, shape: tuple[int, ...]) -> None:
    # A mask that requires grad: CPU takes its math path, tpu the fused kernel with grad_mask.
    got, want, g_dev, g_cpu = run_both(
        lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
        (*qkv(2, 3, 3, 30, 50, 8), rand(*shape, seed=7)),
        grad=True,
        allowed=("aten::sum.IntList_out",),
        grad_inputs=4,
    )
    close(got, want)
    check_grads(g_dev, g_cpu)


def test_direct_backward_matches_meta(eager_mode: str) -> None:
    q, k, v = qkv(2, 4, 2, 20, 30, 16)
    mask = rand(1, 4, 20, 30, seed=3)
    dev = [t.to(DEV) for t in (q, k, v, mask)]
    fwd = FORWARD(*dev, is_causal=True)
    g = rand(2, 4, 20, 16, seed=8).to(DEV)
    rest = (fwd[0], fwd[1], fwd[2], fwd[3], fwd[4], fwd[5], 0.0, True, fwd[6], fwd[7])
    with counted(allowed=("aten::sum.IntList_out",)) as stats:
        grads = BACKWARD(g, *dev, [True, True, True, True], *rest)
    assert stats[FUSED_BACKWARD] == 1
    meta = BACKWARD(
        g.to("meta"),
        *(t.to("meta") for t in (q, k, v, mask)),
        [True, True, True, True],
        fwd[0].to("meta"),
        fwd[1].to("meta"),
        None,
        None,
        20,
        30,
        0.0,
        True,
        fwd[6].to("meta"),
        fwd[7].to("meta"),
    )
    for got, m in zip(grads, meta, strict=True):
        assert (got.shape, got.stride(), got.dtype) == (m.shape, m.stride(), m.dtype)
    # Without the mask's gradient asked for, none is computed.
    grads = BACKWARD(g, *dev, [True, True, True, False], *rest)
    assert grads[3] is None


def test_transformer_block_trains_like_cpu(eager_mode: str) -> None:
    from bench.models import GPT_TINY, Block

    torch.manual_seed(0)
    cpu_block = Block(GPT_TINY)
    dev_block = Block(GPT_TINY).to(DEV)
    dev_block.load_state_dict(cpu_block.state_dict())
    x = rand(2, 16, GPT_TINY.d_model)
    losses = []
    for block, xin in ((cpu_block, x), (dev_block, x.to(DEV))):
        opt = torch.optim.SGD(block.parameters(), lr=0.1)
        run = []
        for _ in range(3):
            opt.zero_grad()
            loss = block(xin).square().mean()
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-5)
    torch.tpu.reset_op_stats()
    dev_block(x.to(DEV)).sum().backward()
    torch.tpu.synchronize()
    assert torch.tpu.op_stats()["native"][FUSED_BACKWARD] == 1
    assert not [op for op in torch.tpu.fallback_stats() if "attention" in op]
