"""tpu_dist: collectives against Gloo, DDP against one process, faults and bad input, on one host
and across hosts (TORCH_TPU_DEVICES_PER_HOST lays out "hosts" on this machine).

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
            env={**os.environ, "OMP_NUM_THREADS": "1", "LOCAL_RANK": str(r), **env},
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


def test_ddp_with_each_rank_on_its_own_chip_matches_one_process(tmp_path: Path) -> None:
    results = run_ranks("ddp_local_rank", 2, tmp_path, TORCH_TPU_NUM_DEVICES="2")
    assert [r["device"] for r in results] == [0, 1]
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


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_async_collectives_follow_the_stream(mode: str, tmp_path: Path) -> None:
    world = 2
    total = 2 * sum(range(1, world + 1))
    for r in run_ranks("async", world, tmp_path, TORCH_TPU_EAGER_MODE=mode):
        # The stream is stalled for 2 s: a launch that waited for it would take that long.
        assert r["pending_at_launch"] and r["launch_seconds"] < 1.0, r
        assert r["first_done"], r
        assert r["value"] == total * world and r["then"] == 10 * total * world, r


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


# Across hosts: TORCH_TPU_DEVICES_PER_HOST splits the ranks into hosts of that many ranks, so that
# the path through host leaders and Gloo runs on this machine.


@pytest.mark.parametrize(("world", "per_host"), [(4, 2), (3, 2)])
def test_collectives_across_hosts_match_gloo(world: int, per_host: int, tmp_path: Path) -> None:
    results = run_ranks("collectives", world, tmp_path, TORCH_TPU_DEVICES_PER_HOST=str(per_host))
    for rank, failures in enumerate(results):
        assert failures == [], f"rank {rank}: " + "\n".join(failures[:20])


@pytest.mark.parametrize("scenario", ["ddp", "fsdp2"])
def test_training_across_hosts_matches_one_process(scenario: str, tmp_path: Path) -> None:
    results = run_ranks(scenario, 2, tmp_path, TORCH_TPU_DEVICES_PER_HOST="1")
    assert results[0]["losses"] == results[1]["losses"]
    assert results[0]["losses"] == pytest.approx(results[0]["reference"], abs=1e-5)


def test_rank_lost_on_another_host_fails_every_rank(tmp_path: Path) -> None:
    # Hosts {0, 1} and {2}: rank 2 exits, so the leaders' step fails; rank 1 hears it from rank 0.
    results = run_ranks("exit", 3, tmp_path, TORCH_TPU_DEVICES_PER_HOST="2")
    for r in results[:2]:
        assert r["error"] and "all_reduce" in r["error"] and "between hosts" in r["error"], r
        assert r["seconds"] < 10


def test_mismatch_between_hosts_fails_every_rank(tmp_path: Path) -> None:
    for r in run_ranks("mismatch", 2, tmp_path, TORCH_TPU_DEVICES_PER_HOST="1"):
        assert r["error"] and "ValueError" in r["error"] and "hosts" in r["error"], r
        assert r["after"] == 6.0
    results = run_ranks("mismatch_between_hosts", 3, tmp_path, TORCH_TPU_DEVICES_PER_HOST="1")
    for r in results:
        assert any("split sizes do not match" in e for e in r["errors"]), r
        assert r["after"] == 9.0
    assert any("sent 20 bytes" in e for e in results[2]["errors"]), results[2]


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_bad_devices_per_host_is_a_value_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch_tpu import distributed

    monkeypatch.setenv("TORCH_TPU_DEVICES_PER_HOST", value)
    with pytest.raises(ValueError, match="TORCH_TPU_DEVICES_PER_HOST"):
        distributed._host_name(0)
