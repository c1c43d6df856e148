"""scaled_dot_product_attention on tpu against PyTorch CPU, forward: the fused kernel (causal or
not, masks of every broadcast shape, bool and additive, rows that see no key, L != S, GQA, scale,
head dims, dtypes, transposed q/k/v), the backend choice, the math path for what the kernel does
not cover, and the overrideable ops called directly (outputs' layout against PyTorch's meta,
logsumexp against CPU's flash attention, errors)."""

from __future__ import annotations

import pytest
import torch
from _attention_checks import DEV, FUSED, NOT_ATTENTION, close, counted, qkv, rand, run_both, sdpa
from torch.nn.attention import SDPBackend, sdpa_kernel

FUSED_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
OVERRIDEABLE = torch.ops.aten._scaled_dot_product_fused_attention_overrideable


@pytest.mark.parametrize("dtype", FUSED_DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lq,s", [(33, 33), (70, 130), (130, 40)])
def test_forward_matches_cpu(
    eager_mode: str, dtype: torch.dtype, causal: bool, lq: int, s: int
) -> None:
    got, want, _, _ = run_both(
        lambda q, k, v: sdpa(q, k, v, is_causal=causal), qkv(2, 3, 3, lq, s, 16, dtype=dtype)
    )
    close(got, want)
    # The layout PyTorch's meta gives the overrideable op: query's.
    assert got.stride() == (3 * lq * 16, lq * 16, 16, 1)


MASK_SHAPES = [
    (20, 50),
    (1, 1, 20, 50),
    (2, 1, 1, 50),
    (2, 3, 20, 50),
    (3, 20, 50),
    (1, 50),
    (20, 1),
]


@pytest.mark.parametrize("shape", MASK_SHAPES)
@pytest.mark.parametrize("kind", ["additive", "bool"])
def test_masks_broadcast(eager_mode: str, shape: tuple[int, ...], kind: str) -> None:
    q, k, v = qkv(2, 3, 3, 20, 50, 8)
    mask = rand(*shape, seed=5)
    mask = mask > -0.5 if kind == "bool" else mask.masked_fill(mask < -1.0, float("-inf"))
    got, want, _, _ = run_both(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), (q, k, v, mask))
    close(got, want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mask_dtype", ["float32", "same"])
def test_additive_mask_dtypes(eager_mode: str, dtype: torch.dtype, mask_dtype: str) -> None:
    mask = rand(1, 3, 20, 40, seed=5).to(torch.float32 if mask_dtype == "float32" else dtype)
    got, want, _, _ = run_both(
        lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
        (*qkv(2, 3, 3, 20, 40, 16, dtype=dtype), mask),
    )
    close(got, want)


@pytest.mark.parametrize("kind", ["additive", "bool"])
def test_rows_that_see_no_key(eager_mode: str, kind: str) -> None:
    # CPU's flash attention gives such rows zeros (not NaN); the kernel does the same.
    keep = rand(20, 300, seed=5) > 0.0
    keep[3] = False
    keep[17, :290] = False  # sees only the last block of keys
    mask = keep if kind == "bool" else torch.zeros(20, 300).masked_fill(~keep, float("-inf"))
    got, want, _, _ = run_both(
        lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), (*qkv(1, 2, 2, 20, 300, 8), mask)
    )
    close(got, want)
    assert torch.equal(got[:, :, 3].cpu(), torch.zeros(1, 2, 8))


def test_causal_with_mask_applies_both(eager_mode: str) -> None:
    mask = rand(40, 40, seed=5)
    got, want, _, _ = run_both(
        lambda q, k, v, m: sdpa(q, k, v, attn_mask=m, is_causal=True),
        (*qkv(1, 2, 2, 40, 40, 8), mask),
    )
    close(got, want)


@pytest.mark.parametrize("hq,hkv", [(6, 2), (6, 3), (4, 1)])
def test_grouped_query_attention(eager_mode: str, hq: int, hkv: int) -> None:
    got, want, _, _ = run_both(
        lambda q, k, v: sdpa(q, k, v, is_causal=True, enable_gqa=True), qkv(2, hq, hkv, 30, 30, 16)
    )
    close(got, want)


@pytest.mark.parametrize("scale", [0.05, 1.0, -0.3])
def test_scale(eager_mode: str, scale: float) -> None:
    got, want, _, _ = run_both(lambda q, k, v: sdpa(q, k, v, scale=scale), qkv(1, 2, 2, 9, 17, 8))
    close(got, want)


@pytest.mark.parametrize("d,dv", [(1, 1), (80, 80), (128, 128), (256, 256), (32, 48)])
def test_head_dims(eager_mode: str, d: int, dv: int) -> None:
    got, want, _, _ = run_both(
        lambda q, k, v: sdpa(q, k, v, is_causal=True), qkv(1, 2, 2, 70, 70, d, dv)
    )
    close(got, want)


@pytest.mark.parametrize("dtype", FUSED_DTYPES)
def test_transposed_qkv(eager_mode: str, dtype: torch.dtype) -> None:
    # As in a transformer block: q, k, v are [B, L, H, D] slices of one projection, transposed.
    x = rand(2, 40, 3 * 4 * 16, dtype=dtype)

    def fn(x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.view(2, 40, 4, 16).transpose(1, 2) for t in x.split(64, dim=2))
        return sdpa(q, k, v, is_causal=True)

    got, want, _, _ = run_both(fn, (x,))
    close(got, want)
    # PyTorch's meta: empty_like(query), which keeps the [B, L, H, D] order of the non-dense view.
    q, k, v = (t.view(2, 40, 4, 16).transpose(1, 2) for t in x.to("meta").split(64, dim=2))
    assert got.stride() == OVERRIDEABLE(q, k, v, is_causal=True)[0].stride() == (2560, 16, 64, 1)


def test_choice() -> None:
    q, k, v = (t.to(DEV) for t in qkv(1, 4, 2, 8, 8, 16))
    overrideable, math = SDPBackend.OVERRIDEABLE.value, SDPBackend.MATH.value
    assert torch._fused_sdp_choice(q, q, q) == overrideable
    assert torch._fused_sdp_choice(q, k, v, enable_gqa=True) == overrideable
    assert torch._fused_sdp_choice(q, k, v) == math  # heads differ without enable_gqa
    assert torch._fused_sdp_choice(q, q, q, dropout_p=0.1) == math
    assert torch._fused_sdp_choice(q.double(), q.double(), q.double()) == math
    assert torch._fused_sdp_choice(q[0], q[0], q[0]) == math
    assert torch._fused_sdp_choice(q, q, q, torch.zeros(3, 8, device=DEV)) == math
    with sdpa_kernel([SDPBackend.MATH]):
        assert torch._fused_sdp_choice(q, q, q) == math
    with sdpa_kernel([SDPBackend.OVERRIDEABLE]), pytest.raises(RuntimeError, match="No avail"):
        torch._fused_sdp_choice(q, q, q, dropout_p=0.5)


MATH_CASES = {
    "float64": lambda: (qkv(2, 3, 3, 10, 12, 8, dtype=torch.float64), {}),
    "3-d": lambda: (qkv(1, 3, 3, 10, 12, 8), {}),
    "batch broadcast": lambda: ((rand(3, 2, 10, 8), rand(1, 2, 12, 8), rand(1, 2, 12, 8)), {}),
    "empty keys": lambda: (qkv(1, 2, 2, 10, 0, 8), {}),
    "dropout 1": lambda: (qkv(1, 2, 2, 10, 12, 8), {"dropout_p": 1.0}),
}


@pytest.mark.parametrize("case", MATH_CASES)
def test_uncovered_cases_take_the_math_path(eager_mode: str, case: str) -> None:
    inputs, kw = MATH_CASES[case]()
    if case == "3-d":
        inputs = tuple(t[0] for t in inputs)
    got, want, _, _ = run_both(
        lambda q, k, v: sdpa(q, k, v, **kw), inputs, fused=0, allowed=NOT_ATTENTION
    )
    close(got, want)


def test_math_path_when_the_user_asks(eager_mode: str) -> None:
    with sdpa_kernel([SDPBackend.MATH]):
        got, want, _, _ = run_both(
            lambda q, k, v: sdpa(q, k, v),
            qkv(1, 2, 2, 6, 6, 8),
            fused=0,
            allowed=NOT_ATTENTION,
        )
    close(got, want)


def meta_of(*args: torch.Tensor | None, **kw: object) -> tuple[object, ...]:
    return OVERRIDEABLE(*(a.to("meta") if a is not None else None for a in args), **kw)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "dv differs"])
def test_direct_call_matches_meta_and_cpu_logsumexp(eager_mode: str, layout: str) -> None:
    q, k, v = qkv(2, 3, 3, 20, 30, 16, 24 if layout == "dv differs" else 16)
    if layout == "transposed":
        q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    mask = rand(20, 30, seed=4)
    with counted() as stats:
        got = OVERRIDEABLE(q.to(DEV), k.to(DEV), v.to(DEV), mask.to(DEV), scale=0.2)
    assert stats[FUSED] == 1
    meta = meta_of(q, k, v, mask, scale=0.2)
    assert len(got) == len(meta) == 9
    for g, m in zip(got, meta, strict=True):
        if isinstance(m, torch.Tensor):
            assert isinstance(g, torch.Tensor)
            assert (g.shape, g.stride(), g.dtype) == (m.shape, m.stride(), m.dtype)
        else:
            assert g == m
    if layout != "dv differs":  # CPU's flash attention wants equal head dims
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, False, attn_mask=mask, scale=0.2
        )[:2]
        close(got[0], out)
        close(got[1], lse)


def test_direct_call_errors() -> None:
    q = rand(1, 2, 4, 8).to(DEV)
    with pytest.raises(NotImplementedError, match="dropout"):
        OVERRIDEABLE(q, q, q, dropout_p=0.5)
    with pytest.raises(NotImplementedError, match="Double"):
        OVERRIDEABLE(q.double(), q.double(), q.double())
    with pytest.raises(RuntimeError, match="incompatible shapes"):
        OVERRIDEABLE(q, q[:, :, :, :4], q)
    with pytest.raises(RuntimeError, match="attn_bias"):
        OVERRIDEABLE(q, q, q, torch.zeros(4, 4, dtype=torch.int32, device=DEV))


def test_empty_queries_and_batches(eager_mode: str) -> None:
    for shape in [(0, 2, 5, 8), (1, 2, 0, 8)]:
        q = rand(*shape).to(DEV)
        k = rand(shape[0], 2, 6, 8).to(DEV)
        with counted(NOT_ATTENTION) as stats:
            out = sdpa(q, k, k)
        assert out.shape == shape and stats.get(FUSED, 0) == 0


def test_three_dim_direct_call(eager_mode: str) -> None:
    # PyTorch's meta takes [H, L, D] inputs as one batch; so does the tpu op.
    q, k, v = (t[0] for t in qkv(1, 3, 3, 10, 12, 8))
    with counted() as stats:
        got = OVERRIDEABLE(q.to(DEV), k.to(DEV), v.to(DEV), is_causal=True)
    assert stats[FUSED] == 1
    meta = meta_of(q, k, v, is_causal=True)
    for g, m in zip(got[:2], meta[:2], strict=True):
        assert isinstance(g, torch.Tensor) and isinstance(m, torch.Tensor)
        assert (g.shape, g.stride(), g.dtype) == (m.shape, m.stride(), m.dtype)
    close(got[0], sdpa(q, k, v, is_causal=True))


def test_mask_on_the_cpu_is_refused(eager_mode: str) -> None:
    # The kernel runs asynchronously and never reads host memory the caller may free: such a
    # mask goes to the math path, which refuses the device mismatch as on CUDA.
    q, k, v = (t.to(DEV) for t in qkv(1, 2, 2, 6, 7, 8))
    mask = rand(6, 7, seed=4)
    with counted(NOT_ATTENTION) as stats, pytest.raises(RuntimeError, match="same device"):
        sdpa(q, k, v, attn_mask=mask)
    assert stats.get(FUSED, 0) == 0
    with pytest.raises(RuntimeError, match="attn_bias must be on"):
        OVERRIDEABLE(q, k, v, mask)


def test_strided_head_dim_and_transposed_mask(eager_mode: str) -> None:
    # q and k with a non-unit stride along the head dim, v broadcast over the batch, a transposed
    # mask: the kernel stages what the GEMMs cannot read in place.
    q = rand(2, 3, 16, 20).transpose(-1, -2)
    k = rand(2, 3, 16, 30, seed=2).transpose(-1, -2)
    v = rand(1, 3, 30, 16, seed=3)
    mask = rand(30, 20, seed=4).t()

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return sdpa(q, k, v.expand(2, 3, 30, 16), attn_mask=m)

    got, want, _, _ = run_both(fn, (q, k, v, mask))
    close(got, want)
