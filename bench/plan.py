"""What a run measures: --quick (the `make bench` budget of 10 minutes on 2 cores) or --full, and
the --only selection."""

from __future__ import annotations

from dataclasses import dataclass, field

SECTIONS = ("limits", "ops", "models", "timesplit", "pjrt", "dist", "compile")


@dataclass(frozen=True)
class Plan:
    mode: str
    op_warmup: int
    op_reps: int
    op_min_time_s: float  # fast ops get more rounds, up to op_max_reps
    op_max_reps: int
    model_warmup: int
    model_reps: int
    model_min_time_s: float  # fast steps get more rounds, up to model_max_reps
    model_max_reps: int
    rss: tuple[str, ...]  # CPU contenders whose peak RSS is probed (a fresh process each)
    # (warm-up, reps) for models whose steps take seconds, so the quick run fits its budget.
    heavy: dict[str, tuple[int, int]] = field(default_factory=dict)
    sections: tuple[str, ...] = SECTIONS
    filters: dict[str, list[str]] = field(default_factory=dict)

    def model_runs(self, model: str) -> tuple[int, int]:
        return self.heavy.get(model, (self.model_warmup, self.model_reps))

    def wants(self, section: str) -> bool:
        return section in self.sections

    def selects(self, section: str, key: str) -> bool:
        pats = self.filters.get(section)
        return not pats or any(p in key for p in pats)


# Quick: one warm-up step on gpt-small (it is also the check, and the compile for torch.compile)
# and 3 timed steps of 1-4 s each; RSS only for the foreach baseline (the fused optimizer's is the
# same to within noise, and torch.compile's would need a second compile in a fresh process).
QUICK = Plan("quick", 1, 5, 0.2, 30, 2, 5, 1.0, 30, ("cpu-eager",), {"gpt-small": (1, 3)})
FULL = Plan(
    "full", 2, 10, 1.0, 100, 3, 10, 3.0, 60, ("cpu-eager", "cpu-eager-fused", "cpu-compile")
)


def parse_only(spec: str | None) -> tuple[tuple[str, ...], dict[str, list[str]]]:
    """ "ops:gemm,models:gpt-tiny" -> sections and substring filters. Ops need the limits for their
    roofline, so selecting ops selects the limits too."""
    if not spec:
        return SECTIONS, {}
    sections: list[str] = []
    filters: dict[str, list[str]] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        section, _, pattern = item.partition(":")
        if section not in SECTIONS:
            raise ValueError(
                f"--only: unknown section {section!r} (choose from {', '.join(SECTIONS)})"
            )
        if section not in sections:
            sections.append(section)
        if pattern:
            filters.setdefault(section, []).append(pattern)
    if "ops" in sections and "limits" not in sections:
        sections.insert(0, "limits")
    return tuple(s for s in SECTIONS if s in sections), filters
