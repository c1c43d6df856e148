"""PNG plots of a run: a roofline chart of the op micro-benchmarks, bars of steps/s and peak
memory per contender for the model steps, and all_reduce bus bandwidth against message size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

Doc = dict[str, Any]
MARKERS = ["o", "^", "s", "D", "v", "P", "X", "*"]
GROUP_COLORS = {
    "elementwise": "tab:blue",
    "reduction": "tab:cyan",
    "gemm fp32": "tab:red",
    "gemm bf16": "tab:orange",
    "conv": "tab:green",
    "attention": "tab:purple",
}


def _limit(doc: Doc, name: str) -> float | None:
    lim = doc["limits"].get(name)
    return lim["value"]["max"] if lim and lim.get("status") == "ok" else None  # best, as the report


def _group(row: dict[str, Any]) -> str:
    short = {"float32": "fp32", "bfloat16": "bf16"}.get(row["dtype"], row["dtype"])
    return f"gemm {short}" if row["group"] == "gemm" else row["group"]


def roofline(doc: Doc, path: Path) -> Path | None:
    rows = [r for r in doc["ops"] if r["group"] != "latency"]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(10, 6.5))
    bw = _limit(doc, "stream_triad")
    peaks = [
        (v, lab, ls)
        for v, lab, ls in (
            (
                max(
                    filter(None, [_limit(doc, "fp32_fma_avx2"), _limit(doc, "fp32_fma_avx512")]),
                    default=None,
                ),
                "fp32 FMA peak",
                "-",
            ),
            (_limit(doc, "bf16_dot_peak"), "bf16 dot peak", "--"),
            (_limit(doc, "sgemm"), "sgemm (torch.mm n=4096)", ":"),
        )
        if v
    ]
    xs = [r["flops"] / r["bytes"] for r in rows]
    lo, hi = min(xs) / 2, max(xs) * 2
    if bw:
        for peak, label, ls in peaks:
            ridge = peak / bw
            grid = [lo, min(max(ridge, lo), hi), hi]
            ax.plot(
                grid,
                [min(peak, bw * x) for x in grid],
                color="black",
                ls=ls,
                lw=1.2,
                label=f"roof: {bw:.0f} GB/s triad, {label} {peak:.0f} GFLOP/s",
            )
    names = [n for n in doc["op_contenders"]]
    short = {c["name"]: c["short"] for c in doc["contenders"]}
    seen_groups: set[str] = set()
    for i, name in enumerate(names):
        for r in rows:
            o = r["results"].get(name, {})
            if o.get("status") != "ok":
                continue
            g = _group(r)
            ax.scatter(
                r["flops"] / r["bytes"],
                o["gflops"],
                marker=MARKERS[i % len(MARKERS)],
                s=46,
                color=GROUP_COLORS.get(g, "gray"),
                edgecolors="black",
                linewidths=0.4,
                alpha=0.85,
            )
            seen_groups.add(g)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop per compulsory byte)")
    ax.set_ylabel("achieved GFLOP/s")
    m = doc["machine"]
    ax.set_title(f"Roofline: op micro-benchmarks ({m['cpu_model']}, {m['threads']} threads)")
    ax.grid(True, which="both", alpha=0.25)
    handles, labels = ax.get_legend_handles_labels()
    for g in GROUP_COLORS:
        if g in seen_groups:
            handles.append(plt.Line2D([], [], marker="o", ls="", color=GROUP_COLORS[g]))
            labels.append(g)
    for i, name in enumerate(names):
        handles.append(plt.Line2D([], [], marker=MARKERS[i % len(MARKERS)], ls="", color="gray"))
        labels.append(short.get(name, name) + ("" if _any_ok(doc["ops"], name) else " (n/a)"))
    ax.legend(handles, labels, fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _any_ok(rows: list[dict[str, Any]], name: str) -> bool:
    return any(r["results"].get(name, {}).get("status") == "ok" for r in rows)


def _mem(o: dict[str, Any]) -> float | None:
    b = o.get("device_peak_bytes", o.get("live_peak_bytes"))
    return b / (1 << 20) if b else None


def model_bars(doc: Doc, path: Path) -> Path | None:
    if not doc["models"]:
        return None
    names = doc["model_contenders"]
    short = {c["name"]: c["short"] for c in doc["contenders"]}
    models = list(dict.fromkeys(r["model"] for r in doc["models"]))
    fig, axes = plt.subplots(2, 2, figsize=(14, 8.5))
    width = 0.8 / len(names)
    colors = plt.get_cmap("tab10")
    for col, task in enumerate(("train", "infer")):
        rows = {r["model"]: r for r in doc["models"] if r["task"] == task}
        for row_i, (metric, ylabel) in enumerate(
            (("speed", "steps/s (log)"), ("mem", "peak MiB (log)"))
        ):
            ax = axes[row_i][col]
            for k, name in enumerate(names):
                for m_i, model in enumerate(models):
                    o = rows.get(model, {}).get("results", {}).get(name, {"status": "n/a"})
                    x = m_i + (k - (len(names) - 1) / 2) * width
                    v = (
                        (1 / o["wall_s"]["median"] if metric == "speed" else _mem(o))
                        if o["status"] == "ok"
                        else None
                    )
                    if v:
                        ax.bar(
                            x, v, width, color=colors(k), label=short[name] if m_i == 0 else None
                        )
                    else:
                        ax.text(
                            x,
                            0.02,
                            o["status"],
                            rotation=90,
                            ha="center",
                            va="bottom",
                            fontsize=7,
                            color=colors(k),
                            transform=ax.get_xaxis_transform(),
                        )
            ax.set_yscale("log")
            ax.set_xlim(-0.55, len(models) - 0.45)
            ax.set_xticks(range(len(models)), models)
            ax.set_ylabel(ylabel)
            what = "speed" if metric == "speed" else "peak memory (CPU: live tensors; tpu: device)"
            ax.set_title(f"{task}: {what}")
            ax.grid(True, axis="y", which="both", alpha=0.25)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors(k)) for k in range(len(names))]
    fig.legend(handles, [short[n] for n in names], loc="lower center", ncol=len(names), fontsize=9)
    fig.suptitle(f"Model steps ({doc['mode']} run, {doc['machine']['threads']} threads)")
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def dist_bandwidth(doc: Doc, path: Path) -> Path | None:
    section = doc.get("dist")
    if not section or section.get("status") == "n/a":
        return None
    from bench.dist import CONTENDERS

    fig, ax = plt.subplots(figsize=(8, 5))
    for k, (name, (_, label)) in enumerate(CONTENDERS.items()):
        rows = sorted(
            (r for r in section["rows"] if r["contender"] == name), key=lambda r: r["bytes"]
        )
        ax.plot(
            [r["bytes"] for r in rows],
            [r["bus_gbps"] for r in rows],
            marker=MARKERS[k],
            label=label,
        )
    ax.axhline(section["memcpy_gbps"], color="gray", linestyle="--", label="memcpy, one thread")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("all_reduce bus bandwidth (GB/s)")
    ax.set_title(f"all_reduce on {section['world']} ranks ({doc['mode']} run)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_plots(doc: Doc, results: Path) -> list[Path]:
    results.mkdir(parents=True, exist_ok=True)
    out = [
        roofline(doc, results / f"roofline-{doc['mode']}.png"),
        model_bars(doc, results / f"models-{doc['mode']}.png"),
        dist_bandwidth(doc, results / f"dist-{doc['mode']}.png"),
    ]
    return [p for p in out if p is not None]
