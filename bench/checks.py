"""Result checks: every contender must compute the same thing as the reference before its time
counts. Tolerances are per dtype and stated in the report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

# Normwise relative error allowed against the PyTorch CPU result. fp32 runs in true fp32 matmul
# precision ("highest"), so differences are only summation order: ~sqrt(K)*eps for K <= 8192.
TENSOR_RTOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 1e-3}

# Training losses drift apart a little each AdamW step (different summation orders, fused vs
# foreach optimizer); a real bug (wrong gradient, skipped update) moves them by far more.
LOSS_RTOL = 2e-3
NORM_RTOL = 1e-3
NORM_ATOL_FRACTION = 0.05  # see norm_atol()
INFER_RTOL = 1e-4


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str = ""


def tensor_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    """Normwise relative error ||got - ref|| / ||ref||, computed in float64 on the CPU."""
    g = got.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    denom = r.norm().item()
    diff = (g - r).norm().item()
    if not math.isfinite(diff):
        return math.inf
    return diff / denom if denom > 0 else diff


def check_tensor(got: torch.Tensor, ref: torch.Tensor, rtol: float | None = None) -> Check:
    if tuple(got.shape) != tuple(ref.shape):
        return Check(False, f"shape {tuple(got.shape)} != {tuple(ref.shape)}")
    if got.dtype != ref.dtype:
        return Check(False, f"dtype {got.dtype} != {ref.dtype}")
    tol = TENSOR_RTOL.get(ref.dtype, 1e-5) if rtol is None else rtol
    err = tensor_error(got, ref)
    if err <= tol:
        return Check(True, f"rel err {err:.1e}")
    return Check(False, f"rel err {err:.1e} > {tol:.0e}")


def check_series(
    got: Sequence[float],
    ref: Sequence[float],
    rtol: float,
    what: str,
    atol: Sequence[float] | None = None,
) -> Check:
    """Element-by-element comparison of two series of scalars (losses, parameter norms):
    |got - ref| <= rtol * |ref| + atol[i] for every i."""
    if len(got) != len(ref):
        return Check(False, f"{len(got)} {what} vs {len(ref)} in the reference")
    worst, worst_i, worst_rel = -1.0, -1, 0.0
    for i, (g, r) in enumerate(zip(got, ref, strict=True)):
        if not (math.isfinite(g) and math.isfinite(r)):
            return Check(False, f"{what} {i} is not finite ({g} vs {r})")
        allowed = rtol * abs(r) + (atol[i] if atol is not None else 0.0)
        excess = abs(g - r) / allowed if allowed > 0 else (0.0 if g == r else math.inf)
        if excess > worst:
            worst, worst_i = excess, i
        worst_rel = max(worst_rel, abs(g - r) / max(abs(r), 1e-12))
    if worst <= 1.0:
        return Check(True, f"max rel err {worst_rel:.1e}")
    g, r = got[worst_i], ref[worst_i]
    rel = abs(g - r) / max(abs(r), 1e-12)
    return Check(False, f"{what} {worst_i}: {g:.6g} vs {r:.6g} (rel {rel:.1e})")


def norm_atol(lr: float, steps: int, numel: int) -> float:
    """Slack for a parameter's norm after `steps` AdamW steps. Adam moves every element by up to
    lr per step whatever its gradient, so where gradients are ~0 (a bias starting at zero) the
    direction is rounding noise and two correct implementations drift apart by a fraction of
    lr * steps * sqrt(numel). A skipped or wrong update moves the norm by far more."""
    return NORM_ATOL_FRACTION * lr * steps * math.sqrt(numel)
