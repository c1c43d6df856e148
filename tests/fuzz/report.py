"""Formatting failure groups for people (no torch import: the parent process of
`python -m tests.fuzz` uses it and never loads PyTorch)."""

from __future__ import annotations

from typing import Any


def format_groups(
    groups: list[dict[str, Any]], *, open_reproducers: bool = True, new_reproducers: bool = True
) -> list[str]:
    """The failure groups (Group.to_json): each new signature with its reproducer; then each
    known open issue (known.OPEN_ISSUES) with its count, signatures and one reproducer; then
    each allowance (known.ALLOWED) that applied, with its count."""
    new = sorted((g for g in groups if g["status"] == "new"), key=lambda g: -g["count"])
    by_known: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for g in groups:
        if g["status"] != "new":
            by_known.setdefault((g["status"], g["known"]), []).append(g)
    n_open = sum(1 for s, _ in by_known if s == "open")
    lines = [
        f"{len(groups)} distinct failure signatures: {len(new)} new; {n_open} known open "
        f"issues (known.OPEN_ISSUES); "
        f"{sum(1 for s, _ in by_known if s == 'allowed')} allowances applied (known.ALLOWED)"
    ]
    for g in new:
        lines += ["", _headline(g), f"   {g['detail']}"]
        if new_reproducers and g.get("reproducer"):
            lines.append(g["reproducer"])
    for status in ("open", "allowed"):
        keys = sorted(
            (k for k in by_known if k[0] == status),
            key=lambda k: -sum(g["count"] for g in by_known[k]),
        )
        for key in keys:
            gs = sorted(by_known[key], key=lambda g: -g["count"])
            total = sum(g["count"] for g in gs)
            modes = sorted({m for g in gs for m in g["modes"]})
            lines += ["", f"== {status}: {key[1]}  x{total} in {', '.join(modes)}"]
            sigs = ", ".join(g["signature"] for g in gs[:6])
            more = f" and {len(gs) - 6} more" if len(gs) > 6 else ""
            lines.append(f"   {len(gs)} signature(s): {sigs}{more}")
            if status == "open":
                rep = next((g for g in gs if g.get("reproducer")), gs[0])
                lines.append(f"   e.g. program {rep['index']}: {rep['detail']}")
                if open_reproducers and rep.get("reproducer"):
                    lines.append(rep["reproducer"])
    return lines


def _headline(g: dict[str, Any]) -> str:
    return (
        f"== new: {g['signature']}  x{g['count']} in {', '.join(sorted(g['modes']))}; first: "
        f"program {g['index']}"
    )
