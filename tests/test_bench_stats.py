"""bench's statistics and formatting helpers (no timing, no device)."""

import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[1]))
from bench.fmt import Footnotes, fmt_bytes, fmt_pct, fmt_ratio, fmt_s, md_table  # noqa: E402
from bench.stats import Summary, ratio, round_order, summarize  # noqa: E402


def test_summarize_odd_and_even() -> None:
    assert summarize([3.0, 1.0, 2.0]) == Summary(2.0, 1.0, 3.0, 3)
    s = summarize([4.0, 1.0, 2.0, 3.0])
    assert (s.median, s.min, s.max, s.n) == (2.5, 1.0, 4.0, 4)


def test_summarize_empty_raises() -> None:
    with pytest.raises(ValueError):
        summarize([])


def test_summary_json_round_trip() -> None:
    s = summarize([0.5, 0.25, 1.0])
    assert Summary.from_json(s.to_json()) == s


def test_ratio_is_speedup() -> None:
    assert ratio(2.0, 1.0) == 2.0  # contender twice as fast
    assert ratio(1.0, 4.0) == 0.25
    with pytest.raises(ValueError):
        ratio(0.0, 1.0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_round_order_balances_positions_and_neighbours(n: int) -> None:
    names = [chr(ord("a") + i) for i in range(n)]
    rounds = 2 * n if n % 2 else n
    orders = [round_order(names, r) for r in range(rounds)]
    for o in orders:
        assert sorted(o) == names
    for pos in range(n):  # every contender in every position, equally often
        firsts = [o[pos] for o in orders]
        assert all(firsts.count(x) == rounds // n for x in names)
    follows = [(o[i], o[i + 1]) for o in orders for i in range(n - 1)]
    for a in names:  # within rounds, each ordered pair equally often
        for b in names:
            if a != b:
                assert follows.count((a, b)) == follows.count((names[0], names[1]))
    assert round_order([], 5) == []


def test_time_and_size_formatting() -> None:
    assert fmt_s(1.234) == "1.23 s"
    assert fmt_s(0.0412) == "41.2 ms"
    assert fmt_s(3.5e-6) == "3.5 µs"
    assert fmt_bytes(3 << 20) == "3 MiB"
    assert fmt_bytes(512) == "512 B"
    assert fmt_ratio(1.0) == "1.00×"
    assert fmt_ratio(12.34) == "12.3×"
    assert fmt_pct(0.5) == "50%"
    assert fmt_pct(0.012) == "1.2%"


def test_md_table_pads_and_aligns() -> None:
    t = md_table(["name", "value"], [["a", "1"], ["long name", "22"]])
    lines = t.splitlines()
    assert lines[0] == "| name      | value |"
    assert lines[1] == "|:----------|------:|"
    assert lines[3] == "| long name |    22 |"
    assert len({len(line) for line in lines}) == 1


def test_md_table_rejects_ragged_rows() -> None:
    with pytest.raises(ValueError):
        md_table(["a", "b"], [["only one"]])


def test_footnotes_number_each_reason_once() -> None:
    fn = Footnotes()
    assert fn.mark("no device") == "[1]"
    assert fn.mark("no compile") == "[2]"
    assert fn.mark("no device") == "[1]"
    assert fn.render() == "[1] no device\n[2] no compile"
