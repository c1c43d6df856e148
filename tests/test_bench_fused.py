"""bench's fused-mode figures: the probe around each step (outside the timed region), the summary
and its recompile check, the report table and the JSON schema of the summary. Fake counters; one
test reads the real device's counters around a tiny fused graph."""

import sys
from pathlib import Path
from typing import Any

import pytest
import torch

sys.path.append(str(Path(__file__).resolve().parents[1]))
from test_bench_results import doc, ok  # noqa: E402

from bench import fused  # noqa: E402
from bench.checks import Check  # noqa: E402
from bench.fmt import fmt_count  # noqa: E402
from bench.report import render  # noqa: E402
from bench.results import validate  # noqa: E402
from bench.timing import OK, delta, interleave  # noqa: E402


def step(misses: float = 0, plan_us: float = 10, **cuts: float) -> dict[str, float]:
    d = {"hits": 3.0, "misses": misses, "compiles": misses, "plan_us": plan_us, "nodes": 40.0}
    d["compile_us"] = 1000.0 * misses
    d.update({fused.CUT + r: n for r, n in cuts.items()})
    return d


def test_recompile_check_from_the_third_step() -> None:
    assert fused.recompile_check([5, 2, 0, 0]) == Check(True, "no compile in steps 3–4")
    bad = fused.recompile_check([5, 0, 0, 1, 0, 2])
    assert not bad.ok
    assert bad.detail == "3 compiles in steps 3–6 (step 4: 1, step 6: 2)"
    short = fused.recompile_check([5, 0])
    assert not short.ok and "need 3" in short.detail


def test_summarize_first_step_and_steady_averages() -> None:
    steps = [
        step(misses=4, plan_us=50, sync=1, backward=1),
        step(misses=1, plan_us=20, sync=1, backward=1),
        step(plan_us=10, sync=1, backward=1, host_read=0),
        step(plan_us=30, sync=1, backward=1, host_read=1),
    ]
    s = fused.summarize(steps, warmup=2)
    assert s["steps"] == 4 and s["timed_steps"] == 2
    assert s["first_step_plan_us"] == 50 + 4000  # lookups + compiling
    assert s["plan_us_per_step"] == 20  # timed steps only: (10 + 30) / 2
    assert s["misses_per_step"] == [4, 1, 0, 0]
    assert s["cuts_per_step"] == {"backward": 1.0, "host_read": 0.5, "sync": 1.0}
    assert s["graphs_per_step"] == 2.5
    assert s["nodes_per_step"] == 40
    assert s["recompile_check"] == {"ok": True, "detail": "no compile in steps 3–4"}
    # A reason that only changed in other contenders' steps reads 0 here and is left out.
    assert "mode_switch" not in fused.summarize([*steps, step(mode_switch=0)], 2)["cuts_per_step"]
    late = fused.summarize([*steps, step(misses=2)], warmup=2)
    assert late["recompile_check"]["ok"] is False
    with pytest.raises(ValueError):
        fused.summarize(steps[:2], warmup=2)


def test_interleave_probes_around_the_timed_call() -> None:
    events: list[str] = []
    reading = {"misses": 0.0}

    class Runner:
        def __init__(self, name: str) -> None:
            self.name = name

        def enter(self) -> None:
            events.append(f"{self.name} enter")

        def run(self, i: int) -> None:
            events.append(f"{self.name} run")
            reading["misses"] += 2.0 if i == 0 else 0.0

        def value(self) -> object:
            events.append(f"{self.name} value")
            return 1.0

    def probe() -> dict[str, float]:
        events.append("probe")
        return dict(reading)

    def same(values: dict[str, list[object]], final: bool) -> dict[str, Check]:
        return {n: Check(True) for n in values}

    runners = {"plain": Runner("plain"), "fused": Runner("fused")}
    out = interleave(runners, 2, 3, same, probes={"fused": probe})  # type: ignore[arg-type]
    assert out["fused"].status == OK
    assert out["fused"].probed == [{"misses": 2.0}] + [{"misses": 0.0}] * 4
    assert out["plain"].probed == []
    i = events.index("fused run")
    assert events[i - 2 : i + 3] == ["fused enter", "probe", "fused run", "probe", "fused value"]
    assert events.count("probe") == 2 * 5


def test_delta_counts_missing_keys_as_zero() -> None:
    assert delta({"a": 1.0}, {"a": 3.0, "cut:sync": 2.0}) == {"a": 2.0, "cut:sync": 2.0}


def test_fmt_count() -> None:
    assert [fmt_count(x) for x in (3.0, 2.5, 1 / 3, 1234.5)] == ["3", "2.5", "0.333", "1234"]


def fused_doc(summary: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    d = doc()
    d["contenders"][2].update(available=True, reason=None, eager_mode="fused")
    o = ok(0.01, **extra)
    if summary is not None:
        o["fused"] = summary
    d["models"][0]["results"]["tpu-fused"] = o
    return d


def summary(last_misses: float = 0) -> dict[str, Any]:
    steps = [step(misses=6, plan_us=2000, sync=1), step(sync=1), step(sync=1)]
    return fused.summarize([*steps, step(misses=last_misses, sync=1, backward=1)], warmup=2)


def fused_row(text: str) -> list[str]:
    """The cells of the fused table's only row."""
    table = text.split("### Fused mode: compile latency, planning, cuts")[1].split("###")[0]
    rows = [line for line in table.splitlines() if line.startswith("| gpt-tiny ")]
    assert len(rows) == 1
    return [c.strip() for c in rows[0].strip().strip("|").split("|")]


def test_report_fused_table() -> None:
    cells = fused_row(render(fused_doc(summary())))
    # first step 30 ms (ok() makes it 3x the median), 8 ms planning in it, steady 10 ms,
    # 10 µs planning per timed step = 0.1% of it, compiles 6 then 0, none later
    assert cells[2:8] == ["30 ms", "8 ms", "10 ms", "10 µs (0.1%)", "6, 0", "0 ok"]
    assert cells[8:] == ["1.5", "40", "sync 1, backward 0.5"]


def test_report_fused_recompile_fails_visibly() -> None:
    text = render(fused_doc(summary(last_misses=3)))
    assert fused_row(text)[7] == "3 FAIL [3]"
    assert "3 compiles in steps 3–4 (step 4: 3)" in text  # the footnote


def test_report_fused_na() -> None:
    text = render(fused_doc(fused_na="torch.tpu.fused_stats missing"))
    assert "torch.tpu.fused_stats missing" in text
    d = doc()  # the fused contender itself n/a: one marker, no figures
    d["contenders"][2]["eager_mode"] = "fused"
    assert fused_row(render(d))[2:4] == ["n/a [3]", ""]
    assert "Fused mode" not in render(doc())  # no contender says it is fused: no table


def test_validate_fused_summary() -> None:
    assert validate(fused_doc(summary())) == []
    s = summary()
    s["misses_per_step"] = s["misses_per_step"][:2]
    del s["recompile_check"]
    errs = validate(fused_doc(s))
    assert errs == [
        "models[0].results.tpu-fused.fused.misses_per_step: 2 entries for 4 steps",
        "models[0].results.tpu-fused.fused.recompile_check: needs ok (bool) and detail (str)",
    ]


def test_read_real_counters_around_a_fused_graph() -> None:
    assert fused.stats_reason() is None
    x = torch.ones(64, device="tpu")
    torch.tpu.synchronize()
    with torch.tpu.eager_mode("fused"):
        before = fused.read()
        y = ((x + 1) * 2).sum()
        torch.tpu.synchronize()
        d = delta(before, fused.read())
    assert y.item() == 256.0
    assert d["cut:sync"] == 1 and d["nodes"] >= 3
    assert d["hits"] + d["misses"] == 1  # one graph, one lookup
