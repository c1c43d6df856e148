"""Random input values, shapes, dtypes and views for the generator, all drawn from one
`random.Random` so a program depends only on its seed."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import torch

from .program import View

# Every dtype the device computes on, with the weight of each in new inputs.
DTYPE_WEIGHTS: dict[torch.dtype, float] = {
    torch.float32: 26,
    torch.float16: 8,
    torch.bfloat16: 8,
    torch.float64: 8,
    torch.complex64: 6,
    torch.int64: 11,
    torch.int32: 7,
    torch.int16: 4,
    torch.int8: 4,
    torch.uint8: 5,
    torch.bool: 9,
}
DTYPES = list(DTYPE_WEIGHTS)
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def pick_dtype(rng: random.Random, among: Sequence[torch.dtype] | None = None) -> torch.dtype:
    pool = list(among) if among is not None else DTYPES
    return rng.choices(pool, [DTYPE_WEIGHTS.get(d, 1) for d in pool])[0]


_SIZES = [0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 7]


def pick_size(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.01:
        return rng.choice([17, 33, 65, 130])  # past a SIMD width, with a tail
    return rng.choice(_SIZES)


def pick_shape(rng: random.Random, ndim: int | None = None) -> tuple[int, ...]:
    if ndim is None:
        ndim = rng.choices([0, 1, 2, 3, 4], [8, 24, 36, 22, 10])[0]
    if rng.random() < 0.004 and ndim >= 1:  # a large tensor: threaded kernels
        return tuple([rng.choice([3, 5])] * (ndim - 1) + [rng.choice([3000, 40000])])[-ndim:]
    return tuple(pick_size(rng) for _ in range(ndim))


def _gen(rng: random.Random) -> torch.Generator:
    return torch.Generator().manual_seed(rng.getrandbits(62))


def _specials(dtype: torch.dtype) -> list[float]:
    fi = torch.finfo(dtype)
    return [
        math.nan,
        math.inf,
        -math.inf,
        0.0,
        -0.0,
        fi.tiny / 4,  # subnormal (a flushed zero on bfloat16 would still compare equal)
        fi.max,
        -fi.max,
        1.0,
        -1.0,
        0.5,
    ]


def float_values(rng: random.Random, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """Values for a floating tensor from one of a few profiles: a small grid (exact in every
    float dtype, so sums and products are often exact), normal, positive, inside [-1, 1], large;
    and, for some tensors, special values (NaN, infinities, signed zeros, subnormals, extremes)
    at random positions."""
    g = _gen(rng)
    n = math.prod(shape)
    profile = rng.choices(["grid", "normal", "positive", "unit", "large"], [35, 30, 15, 12, 8])[0]
    if profile == "grid":
        t = torch.randint(-16, 17, (n,), generator=g).double() / 4
    elif profile == "normal":
        t = torch.randn(n, generator=g, dtype=torch.float64) * 2
    elif profile == "positive":
        t = torch.rand(n, generator=g, dtype=torch.float64) * 4 + 0.01
    elif profile == "unit":
        t = torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1
    else:
        t = torch.randn(n, generator=g, dtype=torch.float64) * 300
    if n and rng.random() < 0.2:
        sp = _specials(dtype)
        k = rng.randint(1, max(1, n // 3))
        for _ in range(k):
            t[rng.randrange(n)] = rng.choice(sp)
    return t.to(dtype).reshape(tuple(shape))


def int_values(
    rng: random.Random, shape: Sequence[int], dtype: torch.dtype, low: int = -6, high: int = 7
) -> torch.Tensor:
    g = _gen(rng)
    n = math.prod(shape)
    if dtype == torch.bool:
        return (torch.rand(n, generator=g) < rng.choice([0.5, 0.2, 0.8])).reshape(tuple(shape))
    info = torch.iinfo(dtype)
    lo, hi = max(low, info.min), min(high, info.max + 1)
    t = torch.randint(lo, hi, (n,), generator=g, dtype=torch.int64)
    if n and rng.random() < 0.1:  # extremes: wrapping arithmetic, overflowing reductions
        for _ in range(rng.randint(1, max(1, n // 3))):
            t[rng.randrange(n)] = rng.choice([info.min, info.max, info.max - 1])
    return t.to(dtype).reshape(tuple(shape))


def values(rng: random.Random, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_complex:
        part = torch.float32 if dtype == torch.complex64 else torch.float64
        re, im = float_values(rng, shape, part), float_values(rng, shape, part)
        if rng.random() < 0.3:
            im = torch.zeros_like(im)
        return torch.complex(re, im)
    if dtype.is_floating_point:
        return float_values(rng, shape, dtype)
    return int_values(rng, shape, dtype)


def index_values(
    rng: random.Random, shape: Sequence[int], size: int, *, bad: float = 0.03
) -> torch.Tensor:
    """int64 indices into a dimension of `size`: in range, sometimes negative (wrapped by the
    ops that allow it) and, with probability `bad`, out of range."""
    g = _gen(rng)
    n = math.prod(shape)
    if size == 0:
        t = torch.zeros(n, dtype=torch.int64)
    else:
        t = torch.randint(0, size, (n,), generator=g)
        if rng.random() < 0.1:
            t = t - size * (torch.rand(n, generator=g) < 0.5).long()
    if n and rng.random() < bad:
        t[rng.randrange(n)] = rng.choice([size, -size - 1, size + 3])
    return t.reshape(tuple(shape))


def unique_index_values(
    rng: random.Random, shape: Sequence[int], dim: int, size: int
) -> torch.Tensor:
    """Indices along `dim` that never repeat for a fixed position of the other dimensions (the
    same permutation prefix everywhere): scatter, index_copy and index_put_ with repeated indices
    write in an unspecified order on CUDA, so the fuzzer makes none."""
    k = shape[dim] if shape else 1
    perm = list(range(size))
    rng.shuffle(perm)
    perm = perm[:k]
    t = torch.tensor(perm, dtype=torch.int64) if perm else torch.zeros(0, dtype=torch.int64)
    if not shape:
        return t.reshape(()) if t.numel() else torch.zeros((), dtype=torch.int64)
    view = [1] * len(shape)
    view[dim] = t.numel()
    return t.reshape(view).expand(*shape).contiguous()


# ---------------------------------------------------------------------------------------------
# Views: a recipe (a base shape and views) whose result has a given shape.


def math_bits(rng: random.Random, dtype: torch.dtype) -> tuple[View, ...]:
    """Now and then a lazy conjugate (complex dtypes) or negative (floating and complex) view on
    top of an input's other views: ops read them, and in-place ops write through them."""
    r = rng.random()
    if dtype.is_complex:
        if r < 0.08:
            return (View("conj"),)
        if r < 0.11:
            return (View("neg"),)
        if r < 0.13:
            return (View("conj"), View("neg"))
    elif dtype.is_floating_point and r < 0.04:
        return (View("neg"),)
    return ()


def view_recipe(
    rng: random.Random, shape: tuple[int, ...], depth: int = 0
) -> tuple[tuple[int, ...], tuple[View, ...]]:
    """A base shape and the views that turn a contiguous tensor of it into `shape`: contiguous
    most often, else transposes, permutes, step slices with a storage offset, expands,
    overlapping as_strided, unsqueeze/select, flips and channels_last, up to two deep."""
    nd = len(shape)
    r = rng.random()
    if depth >= 2 or r < 0.45:
        return shape, ()
    choices = ["slice", "expand", "as_strided", "flip"]
    if nd >= 2:
        choices += ["transpose", "transpose", "permute"]
    if nd == 4:
        choices.append("channels_last")
    if 1 in shape:
        choices.append("unsqueeze")
    if nd <= 3:
        choices.append("select")
    if nd == 0:
        choices = ["expand", "select", "as_strided"]
    kind = rng.choice(choices)
    if kind == "transpose":
        i, j = rng.sample(range(nd), 2)
        pre = list(shape)
        pre[i], pre[j] = pre[j], pre[i]
        base, views = view_recipe(rng, tuple(pre), depth + 1)
        return base, views + (View("transpose", (i, j)),)
    if kind == "permute":
        perm = list(range(nd))
        rng.shuffle(perm)
        pre = [0] * nd
        for k, p in enumerate(perm):
            pre[p] = shape[k]
        base, views = view_recipe(rng, tuple(pre), depth + 1)
        return base, views + (View("permute", tuple(perm)),)
    if kind == "slice" and nd >= 1:
        d = rng.randrange(nd)
        step = rng.choice([1, 2, 3])
        start = rng.choice([0, 1, 2])
        n = shape[d]
        stop = start + (n - 1) * step + 1 if n else start
        pre = list(shape)
        pre[d] = stop + rng.choice([0, 0, 1])
        base, views = view_recipe(rng, tuple(pre), depth + 1)
        return base, views + (View("slice", (d, start, stop, step)),)
    if kind == "expand":
        pre = [1 if rng.random() < 0.5 else s for s in shape]
        lead = rng.randint(0, nd)
        pre = pre[lead:] if rng.random() < 0.3 else pre
        if tuple(pre) == shape:
            if nd == 0:
                return shape, ()
            pre[rng.randrange(nd)] = 1
        base, views = view_recipe(rng, tuple(pre), depth + 1)
        return base, views + (View("expand", shape),)
    if kind == "as_strided":
        strides = tuple(rng.choice([0, 1, 1, 2, 3]) for _ in shape)
        offset = rng.choice([0, 1, 3])
        span = offset + sum((s - 1) * st for s, st in zip(shape, strides, strict=True) if s > 0)
        n = span + 1 if all(s > 0 for s in shape) else offset
        return (n + rng.choice([0, 2]),), (View("as_strided", (shape, strides, offset)),)
    if kind == "flip" and nd >= 1:
        dims = tuple(sorted(rng.sample(range(nd), rng.randint(1, nd))))
        base, views = view_recipe(rng, shape, depth + 1)
        return base, views + (View("flip", dims),)
    if kind == "channels_last":
        base, views = view_recipe(rng, shape, depth + 1)
        return base, views + (View("channels_last"),)
    if kind == "unsqueeze":
        d = rng.choice([i for i, s in enumerate(shape) if s == 1])
        squeezed = shape[:d] + shape[d + 1 :]
        base, views = view_recipe(rng, squeezed, depth + 1)
        return base, views + (View("unsqueeze", (d,)),)
    if kind == "select":
        d = rng.randint(0, nd)
        n = rng.choice([1, 2, 3])
        i = rng.randrange(n)
        selected = shape[:d] + (n,) + shape[d:]
        base, views = view_recipe(rng, selected, depth + 1)
        return base, views + (View("select", (d, i)),)
    return shape, ()
