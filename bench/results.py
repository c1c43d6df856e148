"""The JSON document of a run: its layout, a structural validator (the schema the unit tests and
the report rely on) and where it is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = "torch-tpu-bench/1"
STATUSES = ("ok", "n/a", "wrong")
TOP = {
    "schema": str,
    "created": str,
    "mode": str,
    "command": str,
    "runtime_s": (int, float),
    "machine": dict,
    "load_avg": dict,
    "settings": dict,
    "contenders": list,
    "model_contenders": list,
    "op_contenders": list,
    "limits": dict,
    "ops": list,
    "models": list,
    "timesplit": (dict, type(None)),
    "notes": list,
}
MACHINE = (
    "cpu_model",
    "cores_logical",
    "memory_bytes",
    "torch_version",
    "git_sha",
    "threads",
    "float32_matmul_precision",
)


def _field_errors(
    where: str, d: dict[str, Any], numbers: tuple[str, ...], counts: tuple[str, ...]
) -> list[str]:
    """`numbers` must be numbers and `counts` integers >= 1."""
    errs = [
        f"{where}.{k}: missing or not a number"
        for k in numbers
        if not isinstance(d.get(k), (int, float))
    ]
    return errs + [
        f"{where}.{k}: missing or < 1" for k in counts if not isinstance(d.get(k), int) or d[k] < 1
    ]


def _summary_errors(where: str, s: Any) -> list[str]:
    if not isinstance(s, dict):
        return [f"{where}: not an object"]
    errs = _field_errors(where, s, ("median", "min", "max"), ("n",))
    if not errs and not s["min"] <= s["median"] <= s["max"]:
        errs.append(f"{where}: min <= median <= max does not hold")
    return errs


FUSED_NUMBERS = (
    "first_step_plan_us",
    "plan_us_per_step",
    "hits_per_step",
    "graphs_per_step",
    "nodes_per_step",
)


def fused_errors(where: str, f: Any) -> list[str]:
    """The fused-mode summary of a model step (bench.fused.summarize)."""
    if not isinstance(f, dict):
        return [f"{where}: not an object"]
    errs = _field_errors(where, f, FUSED_NUMBERS, ("steps", "timed_steps"))
    misses = f.get("misses_per_step")
    if not (isinstance(misses, list) and all(isinstance(m, int) for m in misses)):
        errs.append(f"{where}.misses_per_step: not a list of integers")
    elif len(misses) != f.get("steps"):
        errs.append(f"{where}.misses_per_step: {len(misses)} entries for {f.get('steps')} steps")
    cuts = f.get("cuts_per_step")
    if not (isinstance(cuts, dict) and all(isinstance(v, (int, float)) for v in cuts.values())):
        errs.append(f"{where}.cuts_per_step: not an object of numbers")
    check = f.get("recompile_check")
    if not (
        isinstance(check, dict)
        and isinstance(check.get("ok"), bool)
        and isinstance(check.get("detail"), str)
    ):
        errs.append(f"{where}.recompile_check: needs ok (bool) and detail (str)")
    return errs


def outcome_errors(where: str, o: Any) -> list[str]:
    if not isinstance(o, dict):
        return [f"{where}: not an object"]
    status = o.get("status")
    if status not in STATUSES:
        return [f"{where}.status: {status!r} not in {STATUSES}"]
    if status != "ok":
        ok = isinstance(o.get("reason"), str) and o["reason"].strip()
        errs = [] if ok else [f"{where}: {status} without a reason"]
        return errs + [
            f"{where}: {status} must not carry {k}" for k in ("wall_s", "cpu_s") if k in o
        ]
    errs = _summary_errors(f"{where}.wall_s", o.get("wall_s"))
    errs += _summary_errors(f"{where}.cpu_s", o.get("cpu_s"))
    if "fused" in o:
        errs += fused_errors(f"{where}.fused", o["fused"])
    return errs


def pjrt_errors(section: Any) -> list[str]:
    """The PJRT section (bench.pjrt.run), absent from runs that did not select it."""
    if section is None:
        return []
    rows = section.get("rows") if isinstance(section, dict) else None
    if not isinstance(rows, list):
        return ["pjrt.rows: missing or not a list"]
    errs = []
    for i, row in enumerate(rows):
        results = row.get("results") if isinstance(row, dict) else None
        if not isinstance(results, dict) or "cpu-eager" not in results:
            errs.append(f"pjrt.rows[{i}].results: missing or without cpu-eager")
            continue
        for name, r in results.items():
            where = f"pjrt.rows[{i}].results.{name}"
            if r.get("status") not in STATUSES:
                errs.append(f"{where}.status: {r.get('status')!r} not in {STATUSES}")
            elif r["status"] != "ok" and not r.get("reason"):
                errs.append(f"{where}: {r['status']} without a reason")
            elif r["status"] == "ok":
                errs += _field_errors(where, r, ("median_s", "first_s"), ())
    return errs


def dist_errors(section: Any) -> list[str]:
    """The dist section (bench.dist.run), absent from runs that did not select it."""
    if section is None or (isinstance(section, dict) and section.get("status") == "n/a"):
        return [] if section is None or section.get("reason") else ["dist: n/a without a reason"]
    rows = section.get("rows") if isinstance(section, dict) else None
    if not isinstance(rows, list) or not rows:
        return ["dist.rows: missing or empty"]
    errs = [] if isinstance(section.get("memcpy_gbps"), float) else ["dist.memcpy_gbps: missing"]
    for i, row in enumerate(rows):
        errs += _field_errors(f"dist.rows[{i}]", row, ("seconds", "bus_gbps"), ())
    return errs


def compile_errors(section: Any) -> list[str]:
    """The compile section (bench.compile_start.run), absent from runs that did not select it."""
    if section is None or (isinstance(section, dict) and section.get("status") == "n/a"):
        return [] if section is None or section.get("reason") else ["compile: n/a without a reason"]
    errs = _compile_pair_errors("compile", section)
    if isinstance(section, dict) and "precompile" in section:
        errs += _compile_pair_errors("compile.precompile", section["precompile"])
    return errs


def _compile_pair_errors(where: str, pair: Any) -> list[str]:
    """A cold and a warm process's times (bench.compile_start._pair)."""
    errs = []
    for phase in ("cold", "warm"):
        r = pair.get(phase) if isinstance(pair, dict) else None
        if not isinstance(r, dict):
            errs.append(f"{where}.{phase}: missing")
            continue
        errs += _field_errors(f"{where}.{phase}", r, ("first_s", "steady_s", "compile_s"), ())
    return errs


def validate(doc: Any) -> list[str]:
    """Every structural problem of `doc`; empty when it matches the schema."""
    if not isinstance(doc, dict):
        return ["document is not an object"]
    errs = [f"{k}: missing or not {t}" for k, t in TOP.items() if not isinstance(doc.get(k), t)]
    if errs:
        return errs
    if doc["schema"] != SCHEMA:
        errs.append(f"schema: {doc['schema']!r} != {SCHEMA!r}")
    errs += [f"machine.{k}: missing" for k in MACHINE if k not in doc["machine"]]
    names = set()
    for i, c in enumerate(doc["contenders"]):
        if not (
            isinstance(c, dict) and {"name", "short", "label", "device", "available"} <= c.keys()
        ):
            errs.append(f"contenders[{i}]: needs name, short, label, device, available")
            continue
        names.add(c["name"])
        if not c["available"] and not c.get("reason"):
            errs.append(f"contenders[{i}]: unavailable without a reason")
    for key in ("model_contenders", "op_contenders"):
        errs += [f"{key}: unknown contender {n!r}" for n in doc[key] if n not in names]
    for name, lim in doc["limits"].items():
        if lim.get("status") == "ok":
            errs += _summary_errors(f"limits.{name}.value", lim.get("value"))
        elif not lim.get("reason"):
            errs.append(f"limits.{name}: n/a without a reason")
    for i, row in enumerate(doc["ops"]):
        for k in ("group", "name", "shape", "flops", "bytes", "results"):
            if k not in row:
                errs.append(f"ops[{i}].{k}: missing")
        for n in doc["op_contenders"]:
            errs += outcome_errors(f"ops[{i}].results.{n}", row.get("results", {}).get(n))
    errs += pjrt_errors(doc.get("pjrt"))
    errs += dist_errors(doc.get("dist"))
    errs += compile_errors(doc.get("compile"))
    for i, row in enumerate(doc["models"]):
        if row.get("task") not in ("train", "infer"):
            errs.append(f"models[{i}].task: {row.get('task')!r}")
        for n in doc["model_contenders"]:
            errs += outcome_errors(f"models[{i}].results.{n}", row.get("results", {}).get(n))
    return errs


def write(doc: dict[str, Any], results: Path) -> Path:
    """Writes the run as bench-<mode>-<time>.json and as latest-<mode>.json; returns the former."""
    results.mkdir(parents=True, exist_ok=True)
    stamp = doc["created"].replace(":", "").replace("-", "")
    path = results / f"bench-{doc['mode']}-{stamp}.json"
    text = json.dumps(doc, indent=1, sort_keys=False)
    path.write_text(text)
    (results / f"latest-{doc['mode']}.json").write_text(text)
    return path
