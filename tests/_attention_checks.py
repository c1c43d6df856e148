"""Helpers of the attention tests: inputs, tolerances, running SDPA on CPU and on tpu with the
fused kernel's native calls counted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

DEV = "tpu"
FUSED = "scaled_dot_product_attention"
FUSED_BACKWARD = "scaled_dot_product_attention_backward"
# Until the elementwise family lands, the composite's bool-to-additive mask conversion (and the
# math path's softmax) may fall back; the attention ops themselves never may.
ELEMENTWISE = ("aten::logical_not", "aten::where.self", "aten::where.self_out")


def rand(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def qkv(
    b: int, hq: int, hkv: int, lq: int, s: int, d: int, dv: int | None = None, **kw: object
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dtype = kw.get("dtype", torch.float32)
    assert isinstance(dtype, torch.dtype)
    return (
        rand(b, hq, lq, d, dtype=dtype, seed=1),
        rand(b, hkv, s, d, dtype=dtype, seed=2),
        rand(b, hkv, s, dv or d, dtype=dtype, seed=3),
    )


def tol(dtype: torch.dtype) -> dict[str, float]:
    """Two correct kernels that sum in different orders (PyTorch CPU's bf16/fp16 flash attention
    also rounds the probabilities to the dtype before multiplying by v)."""
    if dtype == torch.bfloat16:
        return {"rtol": 2e-2, "atol": 2e-2}
    if dtype == torch.float16:
        return {"rtol": 4e-3, "atol": 4e-3}
    return {"rtol": 1e-4, "atol": 2e-5}


def close(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype | None = None) -> None:
    assert got.device.type == DEV
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **tol(dtype or want.dtype))


# For the math path: other families' ops may fall back, no attention op may.
NOT_ATTENTION = ("*",)


@contextmanager
def counted(allowed: tuple[str, ...] = ELEMENTWISE) -> Iterator[dict[str, int]]:
    """Counts the native calls inside; fails when an op other than `allowed` falls back
    (NOT_ATTENTION: any op whose name does not mention attention)."""
    stats: dict[str, int] = {}
    torch.tpu.reset_op_stats()
    yield stats
    torch.tpu.synchronize()

    def ok(name: str) -> bool:
        return "attention" not in name if allowed == NOT_ATTENTION else name in allowed

    fell_back = {k: v for k, v in torch.tpu.fallback_stats().items() if not ok(k)}
    assert not fell_back, f"fell back to the CPU: {fell_back}"
    stats.update(torch.tpu.op_stats()["native"])


def sdpa(*args: torch.Tensor | None, **kw: object) -> torch.Tensor:
    return F.scaled_dot_product_attention(*args, **kw)  # type: ignore[arg-type]


def run_both(
    fn: Callable[..., torch.Tensor],
    inputs: tuple[torch.Tensor, ...],
    grad: bool = False,
    fused: int = 1,
    allowed: tuple[str, ...] = ELEMENTWISE,
    grad_inputs: int = 3,
) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor | None], list[torch.Tensor | None]]:
    """fn on CPU and on tpu copies of `inputs` (with backward of a fixed random gradient when
    `grad`, wrt the first `grad_inputs` inputs); asserts the fused kernels ran `fused` times
    each. Returns the outputs (tpu, CPU) and the inputs' gradients (tpu, CPU)."""
    cpu_in = [t.clone() for t in inputs]
    dev_in = [t.to(DEV) for t in inputs]
    for i in range(min(grad_inputs, len(inputs)) if grad else 0):
        cpu_in[i].requires_grad_()
        dev_in[i].requires_grad_()
    want = fn(*cpu_in)
    g = rand(*want.shape, dtype=want.dtype, seed=9)
    if grad:
        want.backward(g)
    with counted(allowed) as stats:
        got = fn(*dev_in)
        if grad:
            got.backward(g.to(DEV))
    assert stats.get(FUSED, 0) == fused, stats
    if grad:
        assert stats.get(FUSED_BACKWARD, 0) == fused, stats
    return (
        got,
        want.detach(),
        [t.grad for t in dev_in],
        [t.grad for t in cpu_in],
    )
