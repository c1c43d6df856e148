"""The timing loop's wait for quiet threads (bench/timing.py): what counts as a running thread."""

import hashlib
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.timing import running_threads, settle  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")


def test_a_thread_busy_outside_the_gil_counts_until_it_stops() -> None:
    stop = threading.Event()
    data = bytes(1 << 24)

    def hash_until_stopped() -> None:
        while not stop.is_set():
            hashlib.sha256(data).digest()  # releases the GIL: the thread runs in C

    t = threading.Thread(target=hash_until_stopped)
    t.start()
    try:
        seen = max(running_threads() for _ in range(200))
    finally:
        stop.set()
        t.join()
    assert seen >= 1
    settle(limit_s=1.0)
    assert running_threads() == 0


def test_sleeping_threads_do_not_count() -> None:
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        assert settle(limit_s=1.0) < 1.0
        assert running_threads() == 0
    finally:
        stop.set()
        for t in threads:
            t.join()
