"""The Markdown report, rendered from the JSON document alone (`python -m bench.report FILE`
re-renders a saved run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.fmt import Footnotes, fmt_bytes, fmt_count, fmt_pct, fmt_ratio, fmt_s, md_table

Doc = dict[str, Any]
BASELINE = "cpu-eager"


def _cell(o: dict[str, Any], fn: Footnotes) -> str | None:
    """The n/a or wrong marker of an outcome, or None when it has figures."""
    if o["status"] == "ok":
        return None
    return f"{o['status']} {fn.mark(o.get('reason', 'no reason given'))}"


def _labels(doc: Doc) -> dict[str, str]:
    return {c["name"]: c["short"] for c in doc["contenders"]}


def header(doc: Doc) -> str:
    m = doc["machine"]
    cores = f"{m['cores_logical']} CPUs" + (
        f" ({m['cores_physical']} cores)" if m.get("cores_physical") else ""
    )
    load = doc.get("load_avg", {})
    s = doc["settings"]
    ram, llc = fmt_bytes(m["memory_bytes"]), fmt_bytes(m["llc_bytes"])
    precision = m["float32_matmul_precision"]
    lines = [
        f"## torch-tpu bench ({doc['mode']}), {doc['created']}",
        "",
        f"- machine: {m['cpu_model']}, {cores}, {ram} RAM, LLC {llc}; "
        f"load average {load.get('start', '?')} at start, {load.get('end', '?')} at end",
        f"- torch {m['torch_version']} (CPU BLAS: {m['torch_blas']}); {m['threads']} threads for "
        f'every contender (torch.set_num_threads); float32 matmul precision "{precision}"',
        f"- git {m['git_sha']}; command `{doc['command']}`, {doc['runtime_s']:.0f} s",
        f"- method: {s['warmup']} warm-up then at least {s['reps']} interleaved timed runs per "
        f"contender, more for fast steps (ops: {s['op_warmup']} and at least {s['op_reps']}), "
        "median [min–max]; "
        "every contender's results are checked against PyTorch CPU eager before timing "
        f"(tolerances: {s['tolerances']})",
    ]
    return "\n".join(lines)


def limits_table(doc: Doc, fn: Footnotes) -> str:
    rows = []
    for lim in doc["limits"].values():
        if lim["status"] == "ok":
            v = lim["value"]
            rows.append(
                [
                    lim["label"],
                    f"{v['max']:.1f} {lim['unit']}",
                    f"{v['median']:.1f} [{v['min']:.1f}–{v['max']:.1f}]",
                    lim["method"],
                ]
            )
        else:
            rows.append([lim["label"], f"n/a {fn.mark(lim['reason'])}", "", lim["method"]])
    return (
        "### Limits (measured in this run)\n\n"
        "best = the roof used below (best repetition, as STREAM reports: other load on a shared "
        "machine only ever lowers a repetition).\n\n"
        + md_table(
            ["limit", "best", "median [min–max]", "method"], rows, [False, True, True, False]
        )
    )


def model_tables(doc: Doc, fn: Footnotes) -> str:
    names = doc["model_contenders"]
    lab = _labels(doc)
    heads = ["model", "step", *(lab[n] for n in names)]
    ratio_rows, time_rows, cpu_rows, first_rows, mem_rows = [], [], [], [], []
    for row in doc["models"]:
        res = row["results"]
        base = res.get(BASELINE, {})
        key = [row["model"], row["task"]]
        r_cells, t_cells, c_cells, f_cells, m_cells = [], [], [], [], []
        for n in names:
            o = res[n]
            bad = _cell(o, fn)
            if bad:
                for cells in (r_cells, t_cells, c_cells, f_cells, m_cells):
                    cells.append(bad)
                continue
            w, c = o["wall_s"], o["cpu_s"]
            if n == BASELINE:
                r_cells.append(fmt_s(w["median"]))
            elif base.get("status") == "ok":
                r_cells.append(fmt_ratio(base["wall_s"]["median"] / w["median"]))
            else:
                r_cells.append("no baseline")
            t_cells.append(f"{fmt_s(w['median'])} [{fmt_s(w['min'])}–{fmt_s(w['max'])}]")
            c_cells.append(f"{fmt_s(c['median'])} [{fmt_s(c['min'])}–{fmt_s(c['max'])}]")
            f_cells.append(fmt_s(o["first_s"]) if "first_s" in o else "")
            m_cells.append(memory_cell(o, fn))
        ratio_rows.append(key + r_cells)
        time_rows.append(key + t_cells)
        cpu_rows.append(key + c_cells)
        first_rows.append(key + f_cells)
        mem_rows.append(key + m_cells)
    left = [False, False] + [True] * len(names)
    return "\n\n".join(
        [
            f"### Model steps: speed vs {lab[BASELINE]}\n\n"
            f"{lab[BASELINE]}: median wall time per step; other columns: its time ÷ theirs "
            "(>1 is faster).\n\n" + md_table(heads, ratio_rows, left),
            "### Model steps: wall time per step, median [min–max]\n\n"
            + md_table(heads, time_rows, left),
            "### Model steps: CPU-seconds per step (process CPU time, all threads), "
            "median [min–max]\n\n" + md_table(heads, cpu_rows, left),
            "### Model steps: first call (includes any compilation)\n\n"
            + md_table(heads, first_rows, left),
            "### Model steps: peak memory of one step\n\n"
            "PyTorch CPU: live = peak of live tensor bytes (tensors alive at the step's start + "
            "torch.profiler's allocated-bytes peak during it), RSS = peak RSS of the step in a "
            "fresh process. tpu: device = the contender's tensors alive at the step's start "
            "(counted as for CPU live) + the device's max_memory_allocated() over the step above "
            "what was allocated at its start.\n\n" + md_table(heads, mem_rows, left),
        ]
    )


FUSED_HEADS = [
    "first step",
    "planning in it",
    "steady step",
    "planning / steady step",
    "compiles in steps 1, 2",
    "compiles from step 3",
    "graphs / step",
    "nodes / step",
    "cuts / step by reason",
]


def fused_cells(o: dict[str, Any], fn: Footnotes) -> list[str]:
    """One fused contender's figures for one model step (FUSED_HEADS); a failed recompile check
    shows as FAIL with its detail as a footnote."""
    bad = _cell(o, fn)
    if bad:
        return [bad] + [""] * (len(FUSED_HEADS) - 1)
    first = fmt_s(o["first_s"]) if "first_s" in o else ""
    steady = o["wall_s"]["median"]
    f = o.get("fused")
    if f is None:
        why = o.get("fused_na", "no fused-mode stats recorded")
        return [first, "", fmt_s(steady), f"n/a {fn.mark(why)}"] + [""] * (len(FUSED_HEADS) - 4)
    plan_s = f["plan_us_per_step"] * 1e-6
    misses = f["misses_per_step"]
    check = f["recompile_check"]
    late = sum(misses[2:])
    cuts = sorted(f["cuts_per_step"].items(), key=lambda kv: (-kv[1], kv[0]))
    return [
        first,
        fmt_s(f["first_step_plan_us"] * 1e-6),
        fmt_s(steady),
        f"{fmt_s(plan_s)} ({fmt_pct(plan_s / steady)})",
        ", ".join(str(m) for m in misses[:2]),
        f"{late} ok" if check["ok"] else f"{late} FAIL {fn.mark(check['detail'])}",
        fmt_count(f["graphs_per_step"]),
        fmt_count(f["nodes_per_step"]),
        ", ".join(f"{r} {fmt_count(n)}" for r, n in cuts),
    ]


def fused_table(doc: Doc, fn: Footnotes) -> str:
    """Fused mode's compile latency, planning and graph cuts: one row per model step and fused
    contender; empty when the run had no fused contender."""
    names = [
        c["name"]
        for c in doc["contenders"]
        if c.get("eager_mode") == "fused" and c["name"] in doc["model_contenders"]
    ]
    lab = _labels(doc)
    rows = []
    for row in doc["models"]:
        for n in names:
            step = row["task"] if len(names) == 1 else f"{row['task']} ({lab[n]})"
            rows.append([row["model"], step, *fused_cells(row["results"][n], fn)])
    if not rows:
        return ""
    return (
        "### Fused mode: compile latency, planning, cuts\n\n"
        "first step = its wall time: the compile latency, as it plans every graph it meets for "
        "the first time (it also pays other first-call costs, such as AdamW creating its state). "
        "Planning = the compile cache's plan_us + compile_us (lookups, and compiling the misses; "
        "not the memory plan of each cut). Steady step = the median timed step; per steady step: "
        "planning and its share of the step, graphs cut, nodes in them and the cuts by reason "
        "(torch.tpu.fused_stats()), averaged over the timed steps. Compiles = compile cache "
        "misses; from the third step on there must be none (FAIL otherwise). All read as "
        "differences around each step, outside the timed region.\n\n"
        + md_table(["model", "step", *FUSED_HEADS], rows, [False, False] + [True] * 8 + [False])
    )


def memory_cell(o: dict[str, Any], fn: Footnotes) -> str:
    if "device_peak_bytes" in o:
        return f"device {fmt_bytes(o['device_peak_bytes'])}"
    parts = []
    if "live_peak_bytes" in o:
        parts.append(f"live {fmt_bytes(o['live_peak_bytes'])}")
    if "rss_peak_bytes" in o:
        parts.append(f"RSS {fmt_bytes(o['rss_peak_bytes'])}")
    elif "rss_na" in o:
        parts.append(f"RSS n/a {fn.mark(o['rss_na'])}")
    if "memory_na" in o:
        parts.append(f"n/a {fn.mark(o['memory_na'])}")
    return " · ".join(parts)


def ops_table(doc: Doc, fn: Footnotes) -> str:
    names = doc["op_contenders"]
    lab = _labels(doc)
    heads = [
        "op",
        "shape",
        f"{lab[BASELINE]}",
        "roofline",
        *(lab[n] for n in names if n != BASELINE),
    ]
    rows = []
    for row in doc["ops"]:
        res = row["results"]
        base = res[BASELINE]
        latency = row["group"] == "latency"
        cells = [row["name"], row["shape"]]
        bad = _cell(base, fn)
        if bad:
            cells += [bad, ""]
        else:
            w = base["wall_s"]
            cells.append(
                f"{fmt_s(base['us_per_op'] * 1e-6)}/op"
                if latency
                else f"{fmt_s(w['median'])} [{fmt_s(w['min'])}–{fmt_s(w['max'])}]"
            )
            cells.append(fmt_pct(base["roofline_fraction"]) if "roofline_fraction" in base else "")
        for n in names:
            if n == BASELINE:
                continue
            o = res[n]
            bad = _cell(o, fn)
            if bad:
                cells.append(bad)
                continue
            own = f"{fmt_s(o['us_per_op'] * 1e-6)}/op" if latency else fmt_s(o["wall_s"]["median"])
            ratio = (
                fmt_ratio(base["wall_s"]["median"] / o["wall_s"]["median"])
                if base["status"] == "ok"
                else "?"
            )
            roof = f" · {fmt_pct(o['roofline_fraction'])}" if "roofline_fraction" in o else ""
            cells.append(f"{ratio} ({own}{roof})")
        rows.append(cells)
    return (
        "### Ops: PyTorch CPU vs tpu, and against the roofline\n\n"
        f"{lab[BASELINE]}: median [min–max]; roofline = t_min / t with "
        "t_min = max(bytes / STREAM triad, flops / peak), peak = fp32 FMA peak (bf16 dot peak for "
        "bf16, int8 dot peak for int8). tpu columns: CPU time ÷ tpu time (tpu time · % of "
        "roofline). Above 100% means the limit probes never caught the shared machine quiet "
        "(see the load average).\n\n"
        + md_table(heads, rows, [False, False] + [True] * (len(heads) - 2))
    )


def timesplit_table(doc: Doc, fn: Footnotes) -> str:
    ts = doc.get("timesplit")
    if not ts:
        return ""
    title = "### Time split: gpt-small train step, PyTorch CPU eager (AdamW foreach)\n\n"
    if ts.get("status") == "n/a":
        return title + f"n/a {fn.mark(ts['reason'])}"
    rows = [[k, fmt_s(v), fmt_pct(ts["fraction"][k])] for k, v in ts["seconds"].items()]
    rows.append(["total (profiled step)", fmt_s(ts["step_s"]), "100%"])
    note = (
        "torch.profiler over 2 steps after a warm-up; a category holds its ops' total time, "
        "rest = Python, autograd engine and view/allocation ops.\n\n"
    )
    return (
        title
        + note
        + md_table(["category", "per step", "share"], rows)
        + device_split_table(ts.get("device"), fn)
    )


def device_split_table(ds: dict[str, Any] | None, fn: Footnotes) -> str:
    if not ds:
        return ""
    title = "\n\n### Time split: gpt-tiny train step on tpu, kernels by category\n\n"
    if ds.get("status") == "n/a":
        return title + f"n/a {fn.mark(ds['reason'])}"
    total = ds["kernels_total_s"]
    rows = [[k, fmt_s(v), fmt_pct(v / total)] for k, v in ds["kernel_s"].items()]
    rows.append(["kernels (debug mode)", fmt_s(total), "100%"])
    note = (
        f"Each op's kernel time from the debug-mode op trace, over {ds['steps']} steps (GEMMs run "
        "on every thread; the same kernels run in every mode). The same loop, timed: strict step "
        f"{fmt_s(ds['strict_step_s'])}, fused step {fmt_s(ds['fused_step_s'])}, of which "
        f"{fmt_s(ds['fused_forward_record_s'])} Python recording the forward while the device "
        "waits.\n\n"
    )
    return title + note + md_table(["category", "per step", "share"], rows)


def render(doc: Doc) -> str:
    fn = Footnotes()
    parts = [header(doc)]
    if doc["limits"]:
        parts.append(limits_table(doc, fn))
    if doc["models"]:
        parts.append(model_tables(doc, fn))
        fused = fused_table(doc, fn)
        if fused:
            parts.append(fused)
    if doc.get("timesplit"):
        parts.append(timesplit_table(doc, fn))
    if doc.get("pjrt"):
        from bench.pjrt import table

        parts.append(table(doc["pjrt"], fn))
    if doc.get("dist"):
        from bench.dist import render as dist_table

        parts.append(dist_table(doc["dist"]))
    if doc.get("compile"):
        from bench.compile_start import render as compile_table

        parts.append(compile_table(doc["compile"]))
    if doc["ops"]:
        parts.append(ops_table(doc, fn))
    legend = "\n".join(f"- {c['short']}: {c['label']}" for c in doc["contenders"])
    parts.append("### Contenders\n\n" + legend)
    if doc["notes"]:
        parts.append("### Notes\n\n" + "\n".join(f"- {n}" for n in doc["notes"]))
    if fn.reasons:
        parts.append("### Why n/a or wrong\n\n" + fn.render())
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render(json.loads(Path(sys.argv[1]).read_text())))
