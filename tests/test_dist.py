"""tpu_dist: collectives against Gloo, DDP against one process, faults and bad input.

Each test starts its ranks as separate processes (tests/_dist_worker.py) and kills them on failure;
after the module, /dev/shm holds no segment of the backend.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

WORKER = Path(__file__).with_name("_dist_worker.py")
SEGMENTS = "/dev/shm/torch_tpu_*"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(scenario: str, world: int, tmp_path: Path, timeout: float = 600, **env: str) -> list:
    """Runs `scenario` on `world` ranks; returns each rank's result (None when it wrote none)."""
    port = str(free_port())
    outs = [tmp_path / f"{scenario}-{r}.json" for r in range(world)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), scenario, str(r), str(world), port, str(outs[r])],
            env={**os.environ, "OMP_NUM_THREADS": "1", **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(world)
    ]
    try:
        logs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    for r, (p, log) in enumerate(zip(procs, logs, strict=True)):
        assert p.returncode == 0, f"rank {r} exited with {p.returncode}:\n{log[-4000:]}"
    return [json.loads(o.read_text()) if o.exists() else None for o in outs]


@pytest.fixture(scope="module", autouse=True)
def no_segment_left() -> Iterator[None]:
    before = set(glob.glob(SEGMENTS))
    yield
    assert set(glob.glob(SEGMENTS)) <= before


def test_registered_as_the_tpu_default() -> None:
    assert dist.Backend.default_device_backend_map["tpu"] == "tpu_dist"
    assert "tpu_dist" in dist.Backend.backend_list and "tpu" in dist.Backend.backend_list
    assert set(dist.Backend.backend_capability["tpu_dist"]) == {"tpu", "cpu"}
    assert torch.accelerator.current_accelerator().type == "tpu"


@pytest.mark.parametrize("world", [2, 3])
def test_collectives_match_gloo(world: int, tmp_path: Path) -> None:
    for rank, failures in enumerate(run_ranks("collectives", world, tmp_path)):
        assert failures == [], f"rank {rank}: " + "\n".join(failures[:20])


@pytest.mark.parametrize("mode", ["fused", "debug"])
def test_collectives_in_other_eager_modes(mode: str, tmp_path: Path) -> None:
    results = run_ranks("ddp", 2, tmp_path, TORCH_TPU_EAGER_MODE=mode)
    for r in results:
        assert r["losses"] == pytest.approx(r["reference"], abs=1e-5)


@pytest.mark.parametrize("backend", ["cpu:gloo,tpu:tpu_dist", "", "tpu"])
def test_ddp_matches_one_process(backend: str, tmp_path: Path) -> None:
    results = run_ranks("ddp", 2, tmp_path, TPU_DIST_TEST_BACKEND=backend)
    assert results[0]["losses"] == results[1]["losses"]
    assert results[0]["losses"] == pytest.approx(results[0]["reference"], abs=1e-5)


@pytest.mark.parametrize("scenario", ["fsdp2", "tp"])
def test_fsdp2_and_tensor_parallel_match_one_process(scenario: str, tmp_path: Path) -> None:
    results = run_ranks(scenario, 2, tmp_path, TORCH_TPU_NUM_DEVICES="2")
    assert results[0]["losses"] == results[1]["losses"]
    assert results[0]["losses"] == pytest.approx(results[0]["reference"], abs=1e-5)


def test_dcp_round_trips_a_sharded_model(tmp_path: Path) -> None:
    for r in run_ranks("dcp", 2, tmp_path):
        assert r == {"params_equal": True, "outputs_equal": True}


def test_absent_rank_times_out_naming_it(tmp_path: Path) -> None:
    results = run_ranks("absent", 2, tmp_path, TPU_DIST_TEST_TIMEOUT="2")
    error = results[0]["error"]
    assert error and "all_reduce" in error and "rank 1" in error, error
    assert results[0]["seconds"] < 6


def test_exited_rank_is_named_at_once(tmp_path: Path) -> None:
    results = run_ranks("exit", 2, tmp_path, TPU_DIST_TEST_TIMEOUT="30")
    error = results[0]["error"]
    assert error and "rank 1" in error and "exited" in error, error
    assert results[0]["seconds"] < 10


def test_size_mismatch_fails_on_every_rank(tmp_path: Path) -> None:
    for r in run_ranks("mismatch", 2, tmp_path):
        assert r["error"] and "ValueError" in r["error"], r
        assert r["after"] == 6.0
