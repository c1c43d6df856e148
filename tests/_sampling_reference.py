"""torch.multinomial as csrc/core/ops/tpu_ops_random.h specifies it (MULTINOMIAL), in plain Python:
the Philox4x32-10 stream, the integer weights and the draws. Every driver must draw exactly these
categories, so a test comparing each driver with this reference shows the drivers agree."""

from __future__ import annotations

import bisect
import itertools
import math
import struct

import torch

MASK32 = 0xFFFFFFFF
M0, M1 = 0xD2511F53, 0xCD9E8D57  # Philox multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments


def rng_state(device: int = 0) -> tuple[int, int]:
    """(seed, offset) the next random op on the tpu device will take."""
    seed, offset = struct.unpack("<Qq", bytes(torch.tpu.get_rng_state(device).tolist()))
    return seed, offset


def philox_block(seed: int, offset: int, block: int) -> tuple[int, int, int, int]:
    """The four words of the stream's block: counter (block low, high, offset low, high)."""
    c0, c1 = block & MASK32, block >> 32 & MASK32
    c2, c3 = offset & MASK32, offset >> 32 & MASK32
    k0, k1 = seed & MASK32, seed >> 32 & MASK32
    for _ in range(10):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
        k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
    return c0, c1, c2, c3


def uniform_f64(seed: int, offset: int, element: int) -> float:
    """Element's double uniform: the low 53 bits of words 2e and 2e + 1 (one block holds both)."""
    word = 2 * element
    words = philox_block(seed, offset, word // 4)
    lo, hi = words[word % 4], words[word % 4 + 1]
    return ((hi << 32 | lo) & ((1 << 53) - 1)) * 2.0**-53


def integer_weights(row: list[float]) -> list[int]:
    """q_j = ceil((w_j * 2^s1) * 2^s2), s = k - E, with 2^(E-1) <= max w < 2^E."""
    k = 53 - (len(row) - 1).bit_length()
    s = k - math.frexp(max(row))[1]
    s1 = s if s < 0 else s // 2
    p1, p2 = math.ldexp(1.0, s1), math.ldexp(1.0, s - s1)
    return [math.ceil(w * p1 * p2) for w in row]


def pick(u: float, total: int) -> int:
    return min(math.floor(u * total), total - 1)


def draw_row(
    q: list[int], n: int, replacement: bool, seed: int, offset: int, first: int
) -> list[int]:
    """The n categories of one row whose draws are stream elements first, first + 1, ..."""
    if replacement:
        sums = list(itertools.accumulate(q))
        return [
            bisect.bisect_right(sums, pick(uniform_f64(seed, offset, first + s), sums[-1]))
            for s in range(n)
        ]
    left, drawn = list(q), []
    for s in range(n):
        total = sum(left)
        if total == 0:  # only zero weights left: the first category not drawn
            j = next(j for j in range(len(q)) if j not in drawn)
        else:
            r = pick(uniform_f64(seed, offset, first + s), total)
            j = bisect.bisect_right(list(itertools.accumulate(left)), r)
        drawn.append(j)
        left[j] = 0
    return drawn


def multinomial(
    weights: torch.Tensor, n: int, replacement: bool, seed: int, offset: int
) -> torch.Tensor:
    """The categories MULTINOMIAL draws for valid 1-d or 2-d weights (a CPU int64 tensor)."""
    rows = weights.detach().cpu().double().reshape(-1, weights.shape[-1]).tolist()
    drawn = [
        draw_row(integer_weights(row), n, replacement, seed, offset, b * n)
        for b, row in enumerate(rows)
    ]
    return torch.tensor(drawn, dtype=torch.int64).reshape(*weights.shape[:-1], n)
