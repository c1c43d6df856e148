"""torch.isin and torch.multinomial, what Hugging Face's generate() calls every token to sample and
to stop, run natively on every driver: isin against PyTorch CPU in every form and dtype;
multinomial's draws against the contract of csrc/core/ops/tpu_ops_random.h (tests/
_sampling_reference.py), so both drivers draw the same categories, plus its statistics and
PyTorch CPU's errors."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import _sampling_reference as reference
import pytest
import torch

DEV = "tpu"
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
ISIN_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, *FLOATS]


@contextmanager
def native_only() -> Iterator[None]:
    """Fails unless every op inside ran natively, on the driver itself."""
    torch.tpu.reset_op_stats()
    yield
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}
    assert stats["driver_fallback"] == {}


def cpu_error(fn: Callable[[], object]) -> BaseException:
    """The exception PyTorch CPU raises for fn."""
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def raises_like(expected: BaseException, eager_mode: str, fn: Callable[[], object]) -> None:
    """fn on tpu raises expected's type and message: at the call in debug mode, else by the next
    synchronization (the result is kept alive: fused mode never runs an op whose results died)."""
    with pytest.raises(type(expected), match=re.escape(str(expected).splitlines()[0])):
        result = fn()
        torch.tpu.synchronize()
        del result
    torch.tpu.synchronize()


# ---------------------------------------------------------------------------------------------
# isin


@pytest.mark.parametrize("dtype", ISIN_DTYPES)
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("n_test", [5, 300])  # the host kernel scans a few, sorts many
def test_isin_matches_cpu(eager_mode: str, dtype: torch.dtype, invert: bool, n_test: int) -> None:
    g = torch.Generator().manual_seed(n_test)
    elements = torch.randint(0, 60, (7, 9), generator=g).to(dtype)
    test = torch.randint(0, 60, (n_test,), generator=g).to(dtype)
    with native_only():
        got = torch.isin(elements.to(DEV), test.to(DEV), invert=invert)
        transposed = torch.isin(elements.to(DEV).t(), test.to(DEV)[::2], invert=invert)
    assert got.dtype == torch.bool and got.shape == elements.shape
    assert torch.equal(got.cpu(), torch.isin(elements, test, invert=invert))
    assert torch.equal(transposed.cpu(), torch.isin(elements.t(), test[::2], invert=invert))


@pytest.mark.parametrize("repeat", [1, 40])
def test_isin_nan_and_signed_zeros(eager_mode: str, repeat: int) -> None:
    nan, inf = float("nan"), float("inf")
    elements = torch.tensor([nan, 0.0, -0.0, inf, -inf, 1.5, 2.0])
    test = torch.tensor([nan, -0.0, inf, 2.0]).repeat(repeat)
    with native_only():
        got = torch.isin(elements.to(DEV), test.to(DEV))
    assert got.tolist() == [False, True, True, True, False, False, True]
    assert torch.equal(got.cpu(), torch.isin(elements, test))


@pytest.mark.parametrize(
    "elements, test",
    [
        (torch.tensor([1, 2, 3], dtype=torch.int8), torch.tensor([1.0, 2.5])),
        (torch.tensor([1, 2], dtype=torch.uint8), torch.tensor([257, 2])),
        (
            torch.tensor([0.1, 0.5], dtype=torch.float16),
            torch.tensor([0.1, 0.5], dtype=torch.float64),
        ),
        (torch.tensor(3), torch.tensor([[1, 3], [5, 7]])),
    ],
)
def test_isin_promotes_and_flattens_like_cpu(
    eager_mode: str, elements: torch.Tensor, test: torch.Tensor
) -> None:
    with native_only():
        got = torch.isin(elements.to(DEV), test.to(DEV))
    expected = torch.isin(elements, test)
    assert got.shape == expected.shape and torch.equal(got.cpu(), expected)


def test_isin_scalar_forms_and_out(eager_mode: str) -> None:
    x = torch.tensor([[1, 2, 3], [3, 4, 5]])
    t = torch.tensor([3, 5])
    with native_only():
        a = torch.isin(x.to(DEV), 3)
        b = torch.isin(x.to(DEV), 3, invert=True)
        c = torch.isin(5, t.to(DEV))
        d = torch.isin(2, t.to(DEV), invert=True)
        out = torch.empty(3, 2, dtype=torch.bool, device=DEV).t()
        torch.isin(x.to(DEV), t.to(DEV), out=out)
    assert torch.equal(a.cpu(), torch.isin(x, 3)) and torch.equal(b.cpu(), x != 3)
    assert c.shape == () and c.item() and d.shape == () and d.item()
    assert torch.equal(out.cpu(), torch.isin(x, t)) and out.stride() == (1, 2)


def test_isin_empty(eager_mode: str) -> None:
    with native_only():
        none = torch.isin(torch.empty(0, 3, device=DEV), torch.tensor([1.0], device=DEV))
        no_test = torch.isin(torch.ones(4, device=DEV), torch.empty(0, device=DEV))
        inverted = torch.isin(torch.ones(4, device=DEV), torch.empty(0, device=DEV), invert=True)
    assert none.shape == (0, 3)
    assert no_test.tolist() == [False] * 4 and inverted.tolist() == [True] * 4


def test_isin_errors() -> None:
    for dtype in (torch.bool, torch.complex64):
        x = torch.zeros(3, dtype=dtype)
        expected = cpu_error(lambda x=x: torch.isin(x, x))
        with pytest.raises(RuntimeError, match=re.escape(str(expected))):
            torch.isin(x.to(DEV), x.to(DEV))
    u = torch.tensor([1, 2], dtype=torch.uint16)
    with pytest.raises(NotImplementedError, match="UInt16"):
        torch.isin(u.to(DEV), u.to(DEV))
    with pytest.raises(RuntimeError, match="same device"):
        torch.isin(torch.ones(3, device=DEV), torch.ones(2))


# ---------------------------------------------------------------------------------------------
# multinomial: the draws


def weights(rows: int, k: int, dtype: torch.dtype, seed: int, zeros: int = 0) -> torch.Tensor:
    """Positive random weights, the first `zeros` columns of each row zero."""
    w = torch.rand(rows, k, generator=torch.Generator().manual_seed(seed)) + 0.05
    w[:, :zeros] = 0
    return w.to(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_draws_the_contracts_categories(
    eager_mode: str, dtype: torch.dtype, replacement: bool
) -> None:
    w = weights(5, 12, dtype, seed=1, zeros=3).to(DEV)
    torch.tpu.manual_seed(11)
    cases = [(w, 7), (w[2], 9), (w.t().contiguous().t(), 1)]  # 2-d, 1-d, strided
    if not replacement:
        cases.append((w, 12))  # more than the 9 positive categories: zero weights last
    for probs, n in cases:
        seed, offset = reference.rng_state()
        with native_only():
            got = torch.multinomial(probs, n, replacement)
        assert got.dtype == torch.int64 and got.shape == (*probs.shape[:-1], n)
        assert torch.equal(got.cpu(), reference.multinomial(probs, n, replacement, seed, offset))


def test_multinomial_vocabulary_sized_rows(eager_mode: str) -> None:
    logits = torch.randn(3, 50257, generator=torch.Generator().manual_seed(2)) * 4
    probs = torch.softmax(logits, -1).to(DEV)
    for replacement, n in ((True, 1), (False, 4)):
        seed, offset = reference.rng_state()
        with native_only():
            got = torch.multinomial(probs, n, replacement)
        assert torch.equal(got.cpu(), reference.multinomial(probs, n, replacement, seed, offset))


def test_multinomial_without_replacement_never_repeats(eager_mode: str) -> None:
    w = weights(64, 10, torch.float32, seed=3).to(DEV)
    with native_only():
        some = torch.multinomial(w, 6).cpu()
        every = torch.multinomial(w, 10).cpu()
    assert all(len(set(row)) == 6 for row in some.tolist())
    assert all(sorted(row) == list(range(10)) for row in every.tolist())
    w[:, :4] = 0  # 6 positive categories: drawn first, the zero weights after them
    with native_only():
        past = torch.multinomial(w, 8).cpu()
    for row in past.tolist():
        assert sorted(row[:6]) == list(range(4, 10)) and len(set(row)) == 8


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_never_draws_zero_weights(eager_mode: str, replacement: bool) -> None:
    w = torch.tensor([[0.0, 1e-30, 0.0, 5.0, 0.0, 1e-3], [0.3, 0.0, 0.0, 0.0, 0.7, 0.0]])
    with native_only():
        drawn = torch.multinomial(w.to(DEV), 2 if not replacement else 500, replacement).cpu()
    for row, draws in zip(w.tolist(), drawn.tolist(), strict=True):
        assert all(row[j] > 0 for j in draws)


def test_multinomial_seeding_and_generators(eager_mode: str) -> None:
    w = weights(4, 20, torch.float32, seed=4).to(DEV)
    torch.manual_seed(123)
    a = torch.multinomial(w, 5)
    b = torch.multinomial(w, 5, True)
    torch.manual_seed(123)
    assert torch.equal(a.cpu(), torch.multinomial(w, 5).cpu())
    assert torch.equal(b.cpu(), torch.multinomial(w, 5, True).cpu())
    assert not torch.equal(a.cpu(), torch.multinomial(w, 5).cpu())  # the offset moved on
    g = torch.Generator(device=DEV).manual_seed(9)
    before = torch.tpu.get_rng_state()
    c = torch.multinomial(w, 5, generator=g)
    assert torch.equal(torch.tpu.get_rng_state(), before)
    g.manual_seed(9)
    assert torch.equal(c.cpu(), torch.multinomial(w, 5, generator=g).cpu())


def test_multinomial_many_calls_in_one_graph(eager_mode: str) -> None:
    # 24 calls of 3 checks each: more than one PJRT module holds, so fused runs are cut shorter.
    w = weights(2, 6, torch.float32, seed=8).to(DEV)
    states, drawn = [], []
    with native_only():
        for _ in range(24):
            states.append(reference.rng_state())
            drawn.append(torch.multinomial(w, 2, True))
    for (seed, offset), got in zip(states, drawn, strict=True):
        assert torch.equal(got.cpu(), reference.multinomial(w, 2, True, seed, offset))


def test_multinomial_out() -> None:
    w = weights(3, 8, torch.float64, seed=5).to(DEV)
    out = torch.empty(2, 3, dtype=torch.int64, device=DEV).t()
    seed, offset = reference.rng_state()
    with native_only():
        got = torch.multinomial(w, 2, out=out)
    assert got is out and out.stride() == (1, 3)
    assert torch.equal(out.cpu(), reference.multinomial(w, 2, False, seed, offset))


# ---------------------------------------------------------------------------------------------
# multinomial: frequencies. Each count must lie within 6 standard deviations of its expectation,
# a bound a correct sampler exceeds with probability below 1e-8 per count (the seeds are fixed
# anyway, so the test never flakes); a count of a zero probability must be 0.


def assert_frequencies(counts: list[int], probs: list[float], draws: int) -> None:
    for count, p in zip(counts, probs, strict=True):
        bound = 6 * math.sqrt(draws * p * (1 - p))
        assert abs(count - draws * p) <= bound, (counts, probs)


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial_frequencies_with_replacement(dtype: torch.dtype) -> None:
    w = torch.tensor([0.05, 0.0, 0.15, 0.3, 0.5], dtype=dtype)
    p = (w.double() / w.double().sum()).tolist()  # the weights as the dtype rounds them
    draws = 40000
    torch.tpu.manual_seed(21)
    with native_only():
        drawn = torch.multinomial(w.to(DEV), draws, True)
    counts = torch.bincount(drawn.cpu(), minlength=len(p)).tolist()
    assert_frequencies(counts, p, draws)


def test_multinomial_frequencies_without_replacement() -> None:
    p = [0.1, 0.2, 0.0, 0.3, 0.4]
    rows = 20000
    torch.tpu.manual_seed(22)
    with native_only():
        drawn = torch.multinomial(torch.tensor(p, device=DEV).repeat(rows, 1), 2).cpu()
    # The first draw follows p; the second, p_j / (1 - p_i) after a first draw i.
    second = [sum(p[i] * p[j] / (1 - p[i]) for i in range(len(p)) if i != j) for j in range(5)]
    assert_frequencies(torch.bincount(drawn[:, 0], minlength=5).tolist(), p, rows)
    assert_frequencies(torch.bincount(drawn[:, 1], minlength=5).tolist(), second, rows)


# ---------------------------------------------------------------------------------------------
# multinomial: errors, PyTorch CPU's


NAN, INF = float("nan"), float("inf")
BAD_WEIGHTS = [
    [[1.0, -1.0]],
    [[1.0, NAN]],
    [[1.0, INF]],
    [[0.0, 0.0]],
    [[0.0, 0.0], [1.0, -1.0]],  # a row of zeros before a bad value
    [[1.0, INF], [1.0, NAN]],
]


@pytest.mark.parametrize("rows", BAD_WEIGHTS)
@pytest.mark.parametrize("replacement, n", [(False, 1), (True, 1), (True, 2)])
def test_multinomial_bad_weights_raise_as_on_cpu(
    eager_mode: str, rows: list[list[float]], replacement: bool, n: int
) -> None:
    w = torch.tensor(rows)
    expected = cpu_error(lambda: torch.multinomial(w, n, replacement))
    raises_like(expected, eager_mode, lambda: torch.multinomial(w.to(DEV), n, replacement))
    good = torch.multinomial(torch.ones(3, device=DEV), 2)  # the process goes on
    assert sorted(good.tolist()) in ([0, 1], [0, 2], [1, 2])


@pytest.mark.parametrize(
    "make_call",
    [
        lambda d: torch.multinomial(torch.ones(2, 2, 2, device=d), 1),
        lambda d: torch.multinomial(torch.ones(3, device=d, dtype=torch.int64), 1),
        lambda d: torch.multinomial(torch.ones(3, device=d), 0),
        lambda d: torch.multinomial(torch.ones(3, device=d), 4),
        lambda d: torch.multinomial(torch.ones(3, 0, device=d), 1, True),
        lambda d: torch.multinomial(torch.ones(3, 0, device=d), 2, True),
        lambda d: torch.multinomial(
            torch.ones(3, device=d), 1, out=torch.empty(1, dtype=torch.int32, device=d)
        ),
    ],
)
def test_multinomial_argument_errors_as_on_cpu(make_call: Callable[[str], object]) -> None:
    expected = cpu_error(lambda: make_call("cpu"))
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        make_call(DEV)


# ---------------------------------------------------------------------------------------------
# What generate() does each token


def test_sampling_loop_of_generate(eager_mode: str) -> None:
    torch.tpu.manual_seed(5)
    vocab, eos = 300, torch.tensor([7, 11], device=DEV)
    head = torch.randn(16, vocab, generator=torch.Generator().manual_seed(6)).to(DEV)
    hidden = torch.randn(2, 16, generator=torch.Generator().manual_seed(7)).to(DEV)
    done = torch.zeros(2, dtype=torch.bool, device=DEV)
    with native_only():
        for _ in range(8):
            probs = torch.softmax(hidden @ head / 0.7, dim=-1)
            tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            done = done | torch.isin(tokens, eos)
            hidden = torch.tanh(hidden + head[:, tokens].t())
    assert tokens.dtype == torch.int64 and tokens.shape == (2,) and done.dtype == torch.bool
    assert 0 <= tokens.min().item() and tokens.max().item() < vocab
