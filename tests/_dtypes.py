"""The dtypes the tpu device holds, shared by the tests."""

from __future__ import annotations

import torch

# Dtypes the kernels compute on and convert between.
COMPUTABLE_DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
]

# Dtypes the device stores and copies byte for byte only.
STORAGE_ONLY_DTYPES = [
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
]

STORED_DTYPES = COMPUTABLE_DTYPES + STORAGE_ONLY_DTYPES
