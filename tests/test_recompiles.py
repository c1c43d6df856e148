"""Recompile reasons: every compile-cache miss of a fused-mode graph whose skeleton (its ops and
their connections) was compiled before is counted by reason in torch.tpu.compile_cache_stats()
and, with TORCH_TPU_LOG=recompiles, printed as one line naming the op, the tensor and the
dimension. Runs on both drivers (make pytest-pjrt)."""

from __future__ import annotations

import re

import torch

from tests._subprocess_helpers import check_python

REASONS = ["shape", "dtype", "layout", "attribute", "placement"]

STEPS = """
import torch, torch_tpu
torch.tpu.set_eager_mode("fused")
g = torch.Generator().manual_seed(0)
w = torch.randn(16, 16, generator=g).to("tpu")
def step(seq):
    x = torch.randn(2, seq, 16, generator=g).to("tpu")
    return torch.relu(x @ w).sum().item()
for seq in (5, 5, 5):  # the first steps settle what the graph holds
    step(seq)
torch.tpu.reset_compile_cache_stats()
for seq in (7, 7, 9, 5, 9):
    step(seq)
s = torch.tpu.compile_cache_stats()
print("STATS", s["misses"], s["first_compiles"], s["recompiles_shape"], s["hits"])
"""


def test_recompiles_logged_with_input_and_dimension() -> None:
    run = check_python(STEPS, env={"TORCH_TPU_LOG": "recompiles"})
    stats = next(line for line in run.stdout.splitlines() if line.startswith("STATS"))
    misses, first, shape, hits = (int(v) for v in stats.split()[1:])
    lines = [line for line in run.stderr.splitlines() if "recompile" in line]
    # Lengths 7 and 9 are new; 7 again, 5 and 9 again are cached.
    assert misses == 2 and shape == 2 and first == 0 and hits >= 3, (stats, run.stderr)
    assert len(lines) == 2, run.stderr
    pattern = re.compile(
        r"torch_tpu: recompile \(shape\) of a graph of \d+ ops, \d+ compiled before: "
        r"node \d+ \((\w+)\) (input|output) \d+: sizes \[2, (\d+), 16\] -> \[2, (\d+), 16\] "
        r"\(dimension 1\)"
    )
    seen = [pattern.fullmatch(line) for line in lines]
    assert all(seen), lines
    assert [(m.group(3), m.group(4)) for m in seen if m] == [("5", "7"), ("7", "9")]


def test_nothing_logged_by_default() -> None:
    run = check_python(STEPS, env={"TORCH_TPU_LOG": ""})
    assert "recompile" not in run.stderr, run.stderr


def test_misses_split_by_reason() -> None:
    # Sizes no other test uses: the cache is the process's, shared by every test of a worker.
    torch.tpu.reset_compile_cache_stats()
    with torch.tpu.eager_mode("fused"):
        for dtype in (torch.float32, torch.float32, torch.float64):
            x = torch.arange(91, dtype=dtype, device="tpu").view(13, 7)
            (x * 2).t().sum(0).cpu()
        s = torch.tpu.compile_cache_stats()
        assert s["recompiles_dtype"] == 1 and s["hits"] >= 1, s
        x = torch.arange(126, dtype=torch.float64, device="tpu").view(14, 9)[:13, :7]
        (x * 2).t().sum(0).cpu()
    s = torch.tpu.compile_cache_stats()
    assert s["misses"] == s["first_compiles"] + sum(s[f"recompiles_{r}"] for r in REASONS), s
    assert s["recompiles_dtype"] + s["recompiles_layout"] + s["recompiles_shape"] >= 2, s
