"""Peers: the same GPT-style training step on other PyTorch-on-XLA/TPU stacks, each installed from
PyPI into its own virtual environment under build/peers/, reported as ratios against PyTorch CPU
eager, or as "n/a" with the reason. Optional (not part of make bench):

    python -m bench.peers [--model gpt-tiny|gpt-small] [--only torchax,torch_xla,google-torch-tpu]

Downloads stay small: torchax reuses this checkout's torch through a .pth file and needs ~100 MB
(jaxlib); Google's torch_tpu needs ~240 MB (its wheel and libtpu); PyTorch/XLA is only resolved
(pip --dry-run), never downloaded, because its torch pin is a multi-GB CUDA build on PyPI."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from bench.machine import CACHE, REPO, RESULTS

PEERS = ("torch_xla", "torchax", "google-torch-tpu")
STEP = REPO / "bench" / "peer_step.py"
ROOT = CACHE.parent / "peers"  # build/peers: one virtual environment per peer
LOSS_RTOL = 2e-3  # as bench.checks.LOSS_RTOL; optax.adamw and torch AdamW are the same formula


def sh(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 1800) -> str:
    # From an empty directory: `python -c` puts the working directory first on sys.path, and the
    # checkout's torch_tpu source tree would shadow the package under test.
    cwd = ROOT / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    if done.returncode != 0:
        lines = [
            ln for ln in (done.stderr or done.stdout).strip().splitlines() if "WARNING" not in ln
        ]
        raise RuntimeError(lines[-1][:200] if lines else f"exit {done.returncode}")
    return done.stdout


def make_venv(root: Path, share_main_torch: bool) -> Path:
    py = root / "bin" / "python"
    if not py.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(root)
    if share_main_torch:
        # Reuse this checkout's torch (no second 750 MB copy): appended after the venv's own
        # site-packages, so the peer's packages win.
        site = next((root / "lib").glob("python3*/site-packages"))
        main_site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
        (site / "main-venv.pth").write_text(main_site + "\n")
    return py


def pip_install(py: Path, *specs: str) -> None:
    sh([str(py), "-m", "pip", "install", "-q", *specs])


def peer_env() -> dict[str, str]:
    # The main venv's torch_tpu (ours) is visible through the .pth: keep it from autoloading.
    return dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", JAX_PLATFORMS="cpu")


def setup_torch_xla(root: Path) -> tuple[Path | None, str]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        try:
            sh(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "--dry-run",
                    "--ignore-installed",
                    "-q",
                    "--report",
                    str(report),
                    "torch-xla==2.9.0",
                    "torch==2.9.0",
                ]
            )
        except RuntimeError as e:
            return None, f"pip cannot resolve torch-xla 2.9.0 with torch 2.9.0: {e}"
        names = [i["metadata"]["name"] for i in json.loads(report.read_text())["install"]]
    cuda = [n for n in names if n.lower().startswith("nvidia")]
    if cuda:
        return None, (
            "torch_xla 2.9.0 pins torch 2.9.*, and PyPI's torch 2.9.0 for linux x86_64 is a CUDA "
            f"build pulling {len(cuda)} nvidia-* wheels (several GB; no CPU build on PyPI); "
            "not downloaded"
        )
    py = make_venv(root / "torch_xla", share_main_torch=False)
    pip_install(py, "torch==2.9.0", "torch-xla==2.9.0")
    return None, "torch_xla installed, but its PJRT CPU step is not wired up in peer_step.py yet"


def setup_torchax(root: Path) -> tuple[Path | None, str]:
    py = make_venv(root / "torchax", share_main_torch=True)
    pip_install(py, "torchax==0.0.13", "jax[cpu]", "optax")
    return py, "torchax 0.0.13 on JAX CPU, jax.jit of the whole step, optax.adamw"


def setup_google(root: Path) -> tuple[Path | None, str]:
    import torch

    py = make_venv(root / "google-torch-tpu", share_main_torch=False)
    # Its own torch: this checkout's torch_tpu has the same import name and would collide.
    pip_install(py, f"torch=={torch.__version__}", "torch_tpu==0.2.0")
    # Import only: forcing its device up without a TPU makes libtpu query cloud metadata servers.
    probe = (
        "import json, torch, torch_tpu;"
        "print(json.dumps({'backend': torch._C._get_privateuse1_backend_name(),"
        "'accelerator': torch.accelerator.is_available()}))"
    )
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    info = json.loads(sh([str(py), "-c", probe], env=env).strip().splitlines()[-1])
    if info["backend"] != "tpu" or not info["accelerator"]:
        return None, (
            "Google's torch_tpu 0.2.0 (with libtpu) installs and imports, but registers its tpu "
            "device only when libtpu finds TPU chips; there are none here, and its XLA:CPU path "
            "(TORCH_TPU_INTERNAL_ALLOW_XLA_BACKEND) is internal"
        )
    return py, "Google torch_tpu 0.2.0, eager on its tpu device"


SETUPS = {"torch_xla": setup_torch_xla, "torchax": setup_torchax, "google-torch-tpu": setup_google}
BACKENDS = {"torchax": "torchax", "google-torch-tpu": "google-torch-tpu"}


def step(py: Path, backend: str, model: str, warmup: int, steps: int) -> dict:
    out = sh([str(py), str(STEP), backend, model, str(warmup), str(steps)], env=peer_env())
    return json.loads(out.strip().splitlines()[-1])


def merge(runs: list[dict]) -> dict:
    return {**runs[0], "times": [t for r in runs for t in r["times"]]}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    ap.add_argument("--model", default="gpt-tiny", choices=("gpt-tiny", "gpt-small"))
    ap.add_argument("--only", help="comma list of " + ",".join(PEERS))
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args(argv)
    chosen = [p for p in PEERS if not args.only or p in args.only.split(",")]
    root = ROOT
    t0 = time.perf_counter()
    ready: dict[str, Path] = {}
    notes: dict[str, str] = {}
    for peer in chosen:
        print(f"peers: setting up {peer}", file=sys.stderr, flush=True)
        try:
            py, note = SETUPS[peer](root)
        except Exception as e:
            py, note = None, f"setup failed: {e}"
        notes[peer] = note
        if py is not None:
            ready[peer] = py
    ref_runs: list[dict] = []
    peer_runs: dict[str, list[dict]] = {p: [] for p in ready}
    errors: dict[str, str] = {}
    for _ in range(2):  # reference and peers alternate, process by process
        ref_runs.append(
            step(Path(sys.executable), "torch-cpu", args.model, args.warmup, args.steps)
        )
        for peer, py in ready.items():
            if peer in errors:
                continue
            print(f"peers: running {peer}", file=sys.stderr, flush=True)
            try:
                peer_runs[peer].append(
                    step(py, BACKENDS[peer], args.model, args.warmup, args.steps)
                )
            except Exception as e:
                errors[peer] = f"step failed: {e}"
    ref = merge(ref_runs)
    ref_med = statistics.median(ref["times"])
    rows, results = [], {}
    for peer in chosen:
        if peer not in ready or peer in errors:
            reason = errors.get(peer) or notes[peer]
            results[peer] = {"status": "n/a", "reason": reason}
            rows.append(f"| {peer} | n/a | | | {reason} |")
            continue
        r = merge(peer_runs[peer])
        med = statistics.median(r["times"])
        worst = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref["losses"], strict=True))
        ok = worst <= LOSS_RTOL
        results[peer] = {
            "status": "ok" if ok else "wrong",
            "median_s": med,
            "ratio": ref_med / med,
            "first_s": r["first_s"],
            "loss_max_rel_err": worst,
            "note": notes[peer],
        }
        shown = f"{ref_med / med:.2f}×" if ok else f"wrong (loss rel err {worst:.1e})"
        rows.append(
            f"| {peer} | {shown} | {med * 1e3:.1f} ms | {r['first_s']:.2f} s | {notes[peer]} |"
        )
    table = "\n".join(
        [
            f"### Peers: {args.model} training step vs PyTorch CPU eager "
            f"({ref_med * 1e3:.1f} ms/step, torch {ref['torch']}, {ref['threads']} threads)",
            "",
            "| peer | speed ratio | median step | first step | notes |",
            "|:--|--:|--:|--:|:--|",
            *rows,
        ]
    )
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    doc = {
        "model": args.model,
        "reference": ref,
        "peers": results,
        "runtime_s": time.perf_counter() - t0,
    }
    (RESULTS / f"peers-{args.model}.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
