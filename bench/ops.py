"""Op micro-benchmarks: the cases of issue 3, each timed on PyTorch CPU and on tpu in each eager
mode, with flop and compulsory-byte counts for the roofline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from bench.checks import Check
from bench.machine import torch_bf16_gemm_fast
from bench.models import GPT_SMALL

Inputs = tuple[torch.Tensor, ...]
F32, BF16 = torch.float32, torch.bfloat16
MB64 = 1 << 24  # fp32 elements in 64 MiB
CHAIN = 500  # iterations of the latency chain: two dependent ops each


@dataclass(frozen=True)
class OpCase:
    group: str  # latency | elementwise | reduction | gemm | conv | attention
    name: str
    shape: str
    make: Callable[[torch.Generator], Inputs]  # CPU inputs; the runner moves them to the device
    fn: Callable[[Inputs, torch.Tensor | None], torch.Tensor]  # (inputs, preallocated out or None)
    flops: float
    bytes: float  # compulsory traffic: inputs read once, outputs written once
    dtype: torch.dtype = F32
    uses_out: bool = False
    ops_per_call: int = 1
    readback: bool = False  # copy the result to the host inside the timed region
    quick: bool = True
    expect: Callable[[torch.Tensor], Check] | None = None  # an exact check besides the CPU one
    sampled: bool = False  # random draws: checked by expect alone, not against CPU's draws

    @property
    def key(self) -> str:
        return f"{self.group}/{self.name}/{self.shape}"


def _randn(*shape: int, dtype: torch.dtype = F32) -> Callable[[torch.Generator], Inputs]:
    return lambda g: (torch.randn(*shape, generator=g).to(dtype),)


def _randn2(
    a: tuple[int, ...], b: tuple[int, ...], dtype: torch.dtype = F32
) -> Callable[[torch.Generator], Inputs]:
    return lambda g: (
        torch.randn(*a, generator=g).to(dtype),
        torch.randn(*b, generator=g).to(dtype),
    )


def _chain(inputs: Inputs, out: torch.Tensor | None) -> torch.Tensor:
    """CHAIN x (add one, multiply by the identity): every op depends on the previous one, and the
    exact final value (CHAIN everywhere) shows that none of them was skipped."""
    x, eye = inputs
    for _ in range(CHAIN):
        x = torch.mm(eye, x + 1.0)
    return x


def _chain_expect(y: torch.Tensor) -> Check:
    ok = bool((y.cpu() == float(CHAIN)).all())
    return Check(ok, "exact" if ok else f"chain value {y.cpu().flatten()[0].item()} != {CHAIN}")


def latency_cases() -> list[OpCase]:
    def make(g: torch.Generator) -> Inputs:
        return torch.zeros(8, 8), torch.eye(8)

    return [
        OpCase(
            "latency",
            "add+mm chain",
            f"8x8, {2 * CHAIN} ops",
            make,
            _chain,
            2 * CHAIN * (64 + 1024),
            2 * CHAIN * 3 * 256,
            ops_per_call=2 * CHAIN,
            readback=True,
            expect=_chain_expect,
        ),
    ]


def elementwise_cases() -> list[OpCase]:
    n, b = MB64, 4 * MB64
    gelu_out = torch.ops.aten.gelu.out
    cases = []
    for uses_out in (False, True):
        tag = "out=" if uses_out else "fresh"
        add = (
            (lambda i, o: torch.add(i[0], i[1], out=o)) if uses_out else (lambda i, o: i[0] + i[1])
        )
        mul = (
            (lambda i, o: torch.mul(i[0], i[1], out=o)) if uses_out else (lambda i, o: i[0] * i[1])
        )
        gelu = (lambda i, o: gelu_out(i[0], out=o)) if uses_out else (lambda i, o: F.gelu(i[0]))
        cases += [
            OpCase(
                "elementwise",
                f"add ({tag})",
                "64 MiB fp32",
                _randn2((n,), (n,)),
                add,
                n,
                3 * b,
                uses_out=uses_out,
            ),
            OpCase(
                "elementwise",
                f"mul ({tag})",
                "64 MiB fp32",
                _randn2((n,), (n,)),
                mul,
                n,
                3 * b,
                uses_out=uses_out,
            ),
            # gelu (erf form) counted as 8 flop/element, nominally: bandwidth-bound either way.
            OpCase(
                "elementwise",
                f"gelu ({tag})",
                "64 MiB fp32",
                _randn(n),
                gelu,
                8 * n,
                2 * b,
                uses_out=uses_out,
            ),
        ]
    return cases


def reduction_cases() -> list[OpCase]:
    n, b = MB64, 4 * MB64

    def ln_make(g: torch.Generator) -> Inputs:
        return (
            torch.randn(16384, 1024, generator=g),
            torch.randn(1024, generator=g),
            torch.randn(1024, generator=g),
        )

    return [
        OpCase("reduction", "sum", "64 MiB fp32", _randn(n), lambda i, o: i[0].sum(), n, b),
        OpCase(
            "reduction",
            "softmax",
            "4096x4096 fp32, dim -1",
            _randn(4096, 4096),
            lambda i, o: torch.softmax(i[0], -1),
            5 * n,
            2 * b,
        ),
        OpCase(
            "reduction",
            "layer_norm",
            "16384x1024 fp32",
            ln_make,
            lambda i, o: F.layer_norm(i[0], (1024,), i[1], i[2]),
            8 * n,
            2 * b,
        ),
        # Sorting: "flops" counts a comparison sort's n log2(row) comparisons; bytes are the
        # input, the values and the int64 indices. Full runs only: CPU takes seconds a repetition.
        OpCase(
            "reduction",
            "sort",
            "4096x4096 fp32, dim -1",
            _randn(4096, 4096),
            lambda i, o: torch.sort(i[0], -1).values,
            12 * n,
            4 * b,
            quick=False,
        ),
        OpCase(
            "reduction",
            "topk",
            "64x50257 fp32, k 50",
            _randn(64, 50257),
            lambda i, o: torch.topk(i[0], 50).values,
            64 * 50257 * 16,
            4 * 64 * 50257 + 12 * 64 * 50,
            quick=False,
        ),
        # Small k of long rows, as samplers and retrieval take them: "flops" one comparison per
        # element; bytes the input and the k values and indices.
        OpCase(
            "reduction",
            "topk_small_k",
            "50000 fp32, k 5",
            _randn(50_000),
            lambda i, o: torch.topk(i[0], 5).values,
            50_000,
            4 * 50_000 + 12 * 5,
        ),
        OpCase(
            "reduction",
            "topk_rows",
            "1000x1000 fp32, k 50",
            _randn(1000, 1000),
            lambda i, o: torch.topk(i[0], 50).values,
            1000 * 1000,
            4 * 1000 * 1000 + 12 * 1000 * 50,
        ),
        # Histograms: "flops" the bin arithmetic per element (subtract, multiply, divide).
        OpCase(
            "reduction",
            "histc",
            "64 MiB fp32, 100 bins",
            _randn(n),
            lambda i, o: torch.histc(i[0], 100, -3, 3),
            3 * n,
            b,
        ),
        OpCase(
            "reduction",
            "histc_small",
            "64K fp32, 1000 bins",
            _randn(65536),
            lambda i, o: torch.histc(i[0], 1000, -4, 4),
            3 * 65536,
            4 * 65536,
        ),
    ]


# Sampling's support: a generation step's top-k-filtered distribution over GPT-2's vocabulary,
# every SUPPORT_STEP-th token allowed.
VOCAB, SUPPORT_STEP = 50257, 1000


def _sampling_probs(g: torch.Generator) -> Inputs:
    probs = torch.zeros(64, VOCAB)
    allowed = probs[:, ::SUPPORT_STEP]
    allowed.copy_(torch.rand(allowed.shape, generator=g) + 0.01)
    return (probs / probs.sum(1, keepdim=True),)


def _in_support(y: torch.Tensor) -> Check:
    ok = bool((y.cpu() % SUPPORT_STEP == 0).all())
    return Check(ok, "every draw in the support" if ok else "a draw outside the support")


def sampling_cases() -> list[OpCase]:
    """torch.multinomial as generation calls it: one token per row of 64 (flops: a running sum
    and a comparison per probability; bytes: the probabilities and the draws)."""
    return [
        OpCase(
            "reduction",
            "multinomial",
            f"64x{VOCAB} fp32, 1 draw",
            _sampling_probs,
            lambda i, o: torch.multinomial(i[0], 1),
            2 * 64 * VOCAB,
            4 * 64 * VOCAB + 8 * 64,
            expect=_in_support,
            sampled=True,
        ),
    ]


def embedding_bag_cases() -> list[OpCase]:
    """DLRM-style sparse features: 4096 bags of 32 rows each from a 100000x64 fp32 table, summed
    (flops: one add per gathered element; bytes: the rows, the indices and the output)."""
    rows, dim, bags, per_bag = 100_000, 64, 4096, 32
    n = bags * per_bag

    def make(g: torch.Generator) -> Inputs:
        return (
            torch.randn(rows, dim, generator=g),
            torch.randint(0, rows, (n,), generator=g),
            torch.arange(0, n, per_bag),
        )

    return [
        OpCase(
            "reduction",
            "embedding_bag",
            f"{rows}x{dim} fp32, {bags} bags of {per_bag}, sum",
            make,
            lambda i, o: F.embedding_bag(i[1], i[0], i[2], mode="sum"),
            n * dim,
            4 * n * dim + 8 * n + 4 * bags * dim,
        ),
    ]


def gemm_cases() -> list[OpCase]:
    """Square GEMMs and gpt-small's own: x·Wᵀ forward, dY·W and dYᵀ·x backward (as nn.Linear).
    Where PyTorch CPU has no fast bf16 GEMM (torch_bf16_gemm_fast), bf16 keeps only 256³: the
    reference would take minutes per repetition of the others."""
    cases = []
    t = GPT_SMALL.batch * GPT_SMALL.seq  # 2048 tokens
    d = GPT_SMALL.d_model
    for dtype in (F32, BF16):
        dn = "fp32" if dtype is F32 else "bf16"
        size = dtype.itemsize
        full = dtype is F32 or torch_bf16_gemm_fast()
        for n in (256, 1024, 2048) if full else (256,):
            cases.append(
                OpCase(
                    "gemm",
                    f"mm {dn}",
                    f"{n}x{n}x{n}",
                    _randn2((n, n), (n, n), dtype),
                    lambda i, o: torch.mm(i[0], i[1]),
                    2 * n**3,
                    3 * n * n * size,
                    dtype,
                )
            )
        for n in (3 * d, 4 * d, GPT_SMALL.vocab) if full else ():
            flops, mk = 2 * t * d * n, (t * d + n * d + t * n) * size
            cases += [
                OpCase(
                    "gemm",
                    f"linear fwd {dn}",
                    f"{t}x{d} · {d}x{n}",
                    _randn2((t, d), (n, d), dtype),
                    lambda i, o: torch.mm(i[0], i[1].t()),
                    flops,
                    mk,
                    dtype,
                ),
                OpCase(
                    "gemm",
                    f"linear dX {dn}",
                    f"{t}x{n} · {n}x{d}",
                    _randn2((t, n), (n, d), dtype),
                    lambda i, o: torch.mm(i[0], i[1]),
                    flops,
                    mk,
                    dtype,
                ),
                OpCase(
                    "gemm",
                    f"linear dW {dn}",
                    f"{n}x{t} · {t}x{d}",
                    _randn2((t, n), (t, d), dtype),
                    lambda i, o: torch.mm(i[0].t(), i[1]),
                    flops,
                    mk,
                    dtype,
                ),
            ]
    n = 2048
    cases.append(
        OpCase(
            "gemm",
            "_int_mm int8",
            f"{n}x{n}x{n}",
            lambda g: (
                torch.randint(-128, 128, (n, n), generator=g, dtype=torch.int8),
                torch.randint(-128, 128, (n, n), generator=g, dtype=torch.int8),
            ),
            lambda i, o: torch._int_mm(i[0], i[1]),
            2 * n**3,
            2 * n * n + 4 * n * n,
            torch.int8,
        )
    )
    return cases


def conv_cases() -> list[OpCase]:
    def conv(bsz: int, cin: int, cout: int, hw: int) -> OpCase:
        flops = 2 * bsz * cout * hw * hw * cin * 9
        nbytes = 4 * (bsz * cin * hw * hw + cout * cin * 9 + bsz * cout * hw * hw)
        return OpCase(
            "conv",
            "conv2d 3x3",
            f"{bsz}x{cin}x{hw}x{hw} -> {cout}",
            _randn2((bsz, cin, hw, hw), (cout, cin, 3, 3)),
            lambda i, o: F.conv2d(i[0], i[1], padding=1),
            flops,
            nbytes,
        )

    return [conv(16, 3, 32, 64), conv(16, 64, 64, 32), conv(16, 128, 128, 16)]


def upsample_cases() -> list[OpCase]:
    """Bilinear 2x upsampling of a batch of feature maps (a decoder's or an FPN's): each output
    element mixes 4 inputs with 3 multiply-adds (flops: 8 per output element)."""
    bsz, ch, hw = 16, 64, 64
    out_elems = bsz * ch * 4 * hw * hw
    return [
        OpCase(
            "conv",
            "bilinear upsample 2x",
            f"{bsz}x{ch}x{hw}x{hw} fp32",
            _randn(bsz, ch, hw, hw),
            lambda i, o: F.interpolate(i[0], scale_factor=2, mode="bilinear"),
            8 * out_elems,
            4 * (bsz * ch * hw * hw + out_elems),
        ),
    ]


def attention_cases() -> list[OpCase]:
    c = GPT_SMALL
    b, h, s, dh = c.batch, c.n_heads, c.seq, c.d_model // c.n_heads

    def make(g: torch.Generator) -> Inputs:
        return tuple(torch.randn(b, h, s, dh, generator=g) for _ in range(3))

    flops = 4 * b * h * s * s * dh / 2  # QKᵀ and PV, causal: half the score matrix counts
    return [
        OpCase(
            "attention",
            "sdpa causal",
            f"{b}x{h}x{s}x{dh} fp32",
            make,
            lambda i, o: F.scaled_dot_product_attention(i[0], i[1], i[2], is_causal=True),
            flops,
            4 * 4 * b * h * s * dh,
        ),
    ]


def all_cases(quick: bool) -> list[OpCase]:
    cases = [
        *latency_cases(),
        *elementwise_cases(),
        *reduction_cases(),
        *embedding_bag_cases(),
        *sampling_cases(),
        *gemm_cases(),
        *conv_cases(),
        *upsample_cases(),
        *attention_cases(),
    ]
    return [c for c in cases if c.quick or not quick]
