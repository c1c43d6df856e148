"""PyTorch's OpInfo database on tpu against CPU (tests/opinfo_sweep.py), held to two things: the
ops that leave the device are exactly those listed below, each with its reason, and the shares of
ops that match CPU and run natively stay at or above their floors. An op that starts to fall back
fails the test, and so does a listed op that has become native (take it off the list, so that the
list and README's coverage section stay true). Runs on the process's driver: make pytest on the
host driver; on the PJRT driver by hand (`make pytest-pjrt-models`), not in make test: each
configuration compiles hundreds of executables (3 to 11 minutes)."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import base_seed
from opinfo_sweep import DTYPES, OpResult, summary, sweep

import torch_tpu

DRIVER = "pjrt" if os.environ.get("TORCH_TPU_DRIVER") == "pjrt" else "host"

# Ops that run through the CPU fallback on every driver, by reason.
FALLBACK_REASONS: dict[str, tuple[str, ...]] = {
    "FFT: no FFT library chosen yet (the issue asks for a maintained one, not hand-written)": (
        "stft",
        "fft.fft",
        "fft.fft2",
        "fft.fftn",
        "fft.hfft",
        "fft.hfft2",
        "fft.hfftn",
        "fft.rfft",
        "fft.rfft2",
        "fft.rfftn",
        "fft.ifft",
        "fft.ifft2",
        "fft.ifftn",
        "fft.ihfft",
        "fft.ihfft2",
        "fft.ihfftn",
        "fft.irfft",
        "fft.irfft2",
        "fft.irfftn",
    ),
    "SVD and QR (LAPACK gesdd/geqrf not yet bound) and what is built on them": (
        "svd",
        "svd_lowrank",
        "pca_lowrank",
        "pinverse",
        "norm.nuc",
        "qr",
        "geqrf",
        "ormqr",
        "linalg.qr",
        "linalg.svd",
        "linalg.svdvals",
        "linalg.cond",
        "linalg.matrix_rank",
        "linalg.pinv",
        "linalg.pinv.singular",
        "linalg.pinv.hermitian",
        "linalg.householder_product",
        "linalg.lstsq",
        "linalg.lstsq.grad_oriented",
    ),
    "general eigenproblems and LDL (LAPACK geev/sytrf not yet bound)": (
        "linalg.eig",
        "linalg.eigvals",
        "linalg.ldl_factor",
        "linalg.ldl_factor_ex",
        "linalg.ldl_solve",
        "matrix_exp",
    ),
    "grid_sampler_2d/3d and ctc_loss: no tpu kernel yet": (
        "nn.functional.grid_sample",
        "grid_sampler_2d",
        "grid_sampler_3d",
        "nn.functional.ctc_loss",
    ),
    "fractional max pooling draws its own sample points: no tpu kernel yet": (
        "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d",
    ),
    "histogram and histogramdd (bin edges, weights, density): no tpu kernel yet (histc is)": (
        "histogram",
        "histogramdd",
    ),
    "hash_tensor (PyTorch 2.13's bitwise hash reduction): no tpu kernel yet": ("hash_tensor",),
}

# Ops whose core ops the PJRT driver has no lowering for (they run on the host driver's kernels,
# the driver fallback), by reason.
PJRT_FALLBACK_REASONS: dict[str, tuple[str, ...]] = {
    "igamma/igammac: no PJRT lowering yet": (
        "igamma",
        "igammac",
    ),
    "eigh: XLA's expansion gives eigenvectors of another sign than LAPACK's": (
        "linalg.eigh",
        "linalg.eigvalsh",
        "linalg.matrix_rank.hermitian",
    ),
    "det and slogdet of 0x0 matrices: prod and sum of an empty input run on the host": (
        "logdet",
        "linalg.det",
        "linalg.slogdet",
    ),
    "FFT: no FFT library chosen yet (the issue asks for a maintained one, not hand-written)": (
        "stft",
        "fft.fft",
        "fft.fft2",
        "fft.fftn",
        "fft.hfft",
        "fft.hfft2",
        "fft.hfftn",
        "fft.rfft",
        "fft.rfft2",
        "fft.rfftn",
        "fft.ifft",
        "fft.ifft2",
        "fft.ifftn",
        "fft.ihfft",
        "fft.ihfft2",
        "fft.ihfftn",
        "fft.irfft",
        "fft.irfft2",
        "fft.irfftn",
    ),
    "SVD and QR (LAPACK gesdd/geqrf not yet bound) and what is built on them": (
        "svd",
        "svd_lowrank",
        "pca_lowrank",
        "pinverse",
        "norm.nuc",
        "qr",
        "geqrf",
        "ormqr",
        "linalg.qr",
        "linalg.svd",
        "linalg.svdvals",
        "linalg.cond",
        "linalg.matrix_rank",
        "linalg.pinv",
        "linalg.pinv.singular",
        "linalg.pinv.hermitian",
        "linalg.householder_product",
        "linalg.lstsq",
        "linalg.lstsq.grad_oriented",
    ),
    "general eigenproblems and LDL (LAPACK geev/sytrf not yet bound)": (
        "linalg.eig",
        "linalg.eigvals",
        "linalg.ldl_factor",
        "linalg.ldl_factor_ex",
        "linalg.ldl_solve",
        "matrix_exp",
    ),
    "grid_sampler_2d/3d and ctc_loss: no tpu kernel yet": (
        "nn.functional.grid_sample",
        "grid_sampler_2d",
        "grid_sampler_3d",
        "nn.functional.ctc_loss",
    ),
    "fractional max pooling draws its own sample points: no tpu kernel yet": (
        "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d",
    ),
    "histogram and histogramdd (bin edges, weights, density): no tpu kernel yet (histc is)": (
        "histogram",
        "histogramdd",
    ),
    "hash_tensor (PyTorch 2.13's bitwise hash reduction): no tpu kernel yet": ("hash_tensor",),
}

# Ops whose results differ from CPU's on purpose, and why.
DIFFERS: dict[str, str] = {
    "native_batch_norm": "in eval mode it returns save_mean and save_invstd of C elements, as "
    "CUDA does; CPU returns empty ones",
    "_native_batch_norm_legit": "the same as native_batch_norm",
    "chalf": "tpu tensors have no complex32 (ComplexHalf) dtype",
    "to_sparse": "tpu tensors are strided only: no sparse layouts",
    "sparse.sampled_addmm": "tpu tensors are strided only: no sparse layouts",
    "sparse.mm.reduce": "tpu tensors are strided only: no sparse layouts",
}
BFLOAT16_DIFFERS: dict[str, str] = {
    "native_layer_norm": "mean and rstd of bfloat16 inputs are float32, as CUDA gives them",
    "native_batch_norm": "save_mean and save_invstd of bfloat16 inputs are float32, as on CUDA",
    "_native_batch_norm_legit": "the same as native_batch_norm",
    "_batch_norm_with_update": "the same as native_batch_norm",
}

# The shares' floors (the issue's targets are 99% match; 90% native on the host driver, 85% on
# PJRT; 95% bfloat16 match): raised as ops become native.
MIN_MATCH = {"float32": 0.99, "bfloat16": 0.95}
MIN_NATIVE = {"host": 0.91, "pjrt": 0.89}

CONFIGS = [
    ("float32", "strict"),
    ("float32", "fused"),
    ("float32", "debug"),
    ("bfloat16", "strict"),
]


def expected_fallbacks() -> set[str]:
    names = {name for names in FALLBACK_REASONS.values() for name in names}
    if DRIVER == "pjrt":
        names |= {name for names in PJRT_FALLBACK_REASONS.values() for name in names}
    return names


def run(dtype: str, mode: str) -> list[OpResult]:
    with torch_tpu.tpu.eager_mode(mode):
        return sweep(DTYPES[dtype], samples=2, seed=base_seed())


@pytest.mark.parametrize(("dtype", "mode"), CONFIGS)
def test_opinfo_sweep(dtype: str, mode: str, request: pytest.FixtureRequest) -> None:
    results = run(dtype, mode)
    lines = summary(results, f"{dtype} {mode} {DRIVER}")
    request.node.add_report_section("call", "opinfo", "\n".join(lines))
    differs = DIFFERS | (BFLOAT16_DIFFERS if dtype == "bfloat16" else {})
    mismatched = {r.name: r.problem for r in results if not r.match and r.name not in differs}
    assert not mismatched, mismatched
    expected = expected_fallbacks()
    leaving = {r.name: r.fallbacks for r in results if not r.native and r.name not in differs}
    new = {name: calls for name, calls in leaving.items() if name not in expected}
    assert not new, f"ops that leave the device and are not listed: {new}"
    native_now = sorted(expected & {r.name for r in results if r.native})
    assert not native_now, f"listed ops now run natively (take them off the list): {native_now}"
    total = len(results)
    assert sum(r.match for r in results) >= MIN_MATCH[dtype] * total, lines
    assert sum(r.native for r in results) >= MIN_NATIVE[DRIVER] * total, lines
    torch.tpu.synchronize()
