"""Formatting of numbers and Markdown tables, shared by the report and the plots."""

from __future__ import annotations

from collections.abc import Sequence


def fmt_s(s: float) -> str:
    """Seconds with three significant figures and a unit that keeps the number readable."""
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def fmt_ratio(r: float) -> str:
    return f"{r:.2f}×" if r < 10 else f"{r:.1f}×"


def fmt_count(x: float) -> str:
    """A count or a mean count: whole numbers as such, fractions to three significant figures."""
    return f"{x:.0f}" if x == int(x) or abs(x) >= 100 else f"{x:.3g}"


def fmt_pct(f: float) -> str:
    return f"{100 * f:.0f}%" if f >= 0.095 else f"{100 * f:.1f}%"


def md_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None
) -> str:
    """A Markdown table padded to column width, so it also reads well as plain text."""
    if right is None:
        right = [i > 0 for i in range(len(headers))]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells, header has {len(headers)}")
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if r else (":" + "-" * (w + 1))
            for w, r in zip(widths, right, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


class Footnotes:
    """Numbers each distinct n/a or wrong reason once; cells show the number, the list follows."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def mark(self, reason: str) -> str:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"[{self.reasons.index(reason) + 1}]"

    def render(self) -> str:
        return "\n".join(f"[{i + 1}] {r}" for i, r in enumerate(self.reasons))
