"""The vision family on tpu against PyTorch CPU: F.interpolate's nearest, nearest-exact, linear,
bilinear, trilinear and bicubic modes (sizes and scale factors, up and down, align_corners,
recompute_scale_factor) and the reflection and replication pads (1-d to 3-d, batched or not,
negative replication pads), each with its gradient, in every dtype CPU takes, with NaN and
infinities, channels-last and non-contiguous inputs, empty batches and out=; errors as CPU raises
them; and that each runs natively, with no call through the CPU fallback or the driver's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from _reduce_checks import FLOAT_DTYPES, check, grads, make, raises_like_cpu


def tol(dtype: torch.dtype) -> dict[str, float]:
    """Float16 and bfloat16 round each result once where CPU may round its weights too."""
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 2e-2, "atol": 2e-2}
    return {}


def native(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """check(), then that no call went through the driver's fallback either."""
    got = check(fn, *args, **kw)
    assert torch.tpu.op_stats()["driver_fallback"] == {}, torch.tpu.op_stats()["driver_fallback"]
    return got


def specials(x: torch.Tensor) -> torch.Tensor:
    """x with a NaN, infinities and a negative zero in its first elements."""
    x = x.clone()
    flat = x.view(-1)
    flat[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0], dtype=x.dtype)
    return x


SHAPES = {1: (2, 3, 7), 2: (2, 3, 5, 6), 3: (1, 2, 3, 4, 5)}
UP = {1: [11], 2: [9, 13], 3: [5, 7, 8]}
DOWN = {1: [4], 2: [3, 4], 3: [2, 3, 3]}
LINEAR = {1: "linear", 2: "bilinear", 3: "trilinear"}


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.uint8, *FLOAT_DTYPES], ids=str)
def test_nearest(mode: str, nd: int, dtype: torch.dtype, eager_mode: str) -> None:
    x = make(SHAPES[nd], dtype)
    for size in (UP[nd], DOWN[nd], [2 * s for s in SHAPES[nd][2:]]):
        native(lambda t, s=size: F.interpolate(t, size=s, mode=mode), x)
    native(lambda t: F.interpolate(t, scale_factor=1.7, mode=mode), x)
    native(lambda t: F.interpolate(t, scale_factor=0.6, mode=mode, recompute_scale_factor=True), x)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_linear(nd: int, align: bool, dtype: torch.dtype, eager_mode: str) -> None:
    x = make(SHAPES[nd], dtype)
    mode = LINEAR[nd]
    for size in (UP[nd], DOWN[nd], list(SHAPES[nd][2:])):
        native(
            lambda t, s=size: F.interpolate(t, size=s, mode=mode, align_corners=align),
            x,
            **tol(dtype),
        )
    native(
        lambda t: F.interpolate(t, scale_factor=2.5, mode=mode, align_corners=align),
        x,
        **tol(dtype),
    )


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_bicubic(align: bool, dtype: torch.dtype, eager_mode: str) -> None:
    x = make(SHAPES[2], dtype)
    for size in (UP[2], DOWN[2], [1, 1]):
        native(
            lambda t, s=size: F.interpolate(t, size=s, mode="bicubic", align_corners=align),
            x,
            **tol(dtype),
        )
    native(
        lambda t: F.interpolate(t, scale_factor=(1.5, 0.75), mode="bicubic", align_corners=align),
        x,
        **tol(dtype),
    )


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_layouts_and_special_values(mode: str, eager_mode: str) -> None:
    x = specials(make((2, 4, 6, 5), torch.float32))
    native(lambda t: F.interpolate(t, size=(11, 7), mode=mode), x)
    cl = x.contiguous(memory_format=torch.channels_last)
    native(lambda t: F.interpolate(t, size=(11, 7), mode=mode), cl)
    native(lambda t: F.interpolate(t.transpose(2, 3), size=(4, 9), mode=mode), x)
    native(lambda t: F.interpolate(t[:, :, ::2], size=(4, 9), mode=mode), x)


@pytest.mark.parametrize(
    "mode,nd,align",
    [
        ("nearest", 1, None),
        ("nearest", 2, None),
        ("nearest", 3, None),
        ("nearest-exact", 2, None),
        ("linear", 1, False),
        ("bilinear", 2, False),
        ("bilinear", 2, True),
        ("trilinear", 3, True),
        ("bicubic", 2, False),
        ("bicubic", 2, True),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_interpolate_grad(
    mode: str, nd: int, align: bool | None, dtype: torch.dtype, eager_mode: str
) -> None:
    x = make(SHAPES[nd], dtype)
    for size in (UP[nd], DOWN[nd]):
        grads(
            lambda t, s=size: F.interpolate(t, size=s, mode=mode, align_corners=align),
            x,
            **tol(dtype),
        )


def test_upsample_out_and_backward_ops(eager_mode: str) -> None:
    x = make((2, 3, 4, 5), torch.float32)
    out = torch.empty(0)
    native(
        lambda t, o: torch.ops.aten.upsample_bilinear2d.out(t, [7, 9], True, None, None, out=o),
        x,
        out,
        meta=False,
    )
    native(
        lambda t, o: torch.ops.aten.upsample_nearest2d.out(t, [7, 9], None, None, out=o),
        x,
        out,
        meta=False,
    )
    g = make((2, 3, 7, 9), torch.float32)
    native(
        lambda t: torch.ops.aten.upsample_bilinear2d_backward(
            t, [7, 9], [2, 3, 4, 5], False, None, None
        ),
        g,
    )
    native(
        lambda t: torch.ops.aten.upsample_nearest2d_backward(t, [7, 9], [2, 3, 4, 5], 1.9, 2.1), g
    )
    native(
        lambda t: torch.ops.aten._upsample_nearest_exact1d_backward(t, [7], [1, 3, 4], None),
        make((1, 3, 7), torch.float32),
    )


def test_interpolate_errors() -> None:
    x = make((1, 2, 4, 4), torch.int32)
    raises_like_cpu(lambda t: F.interpolate(t, size=(8, 8), mode="bilinear"), x)
    raises_like_cpu(lambda t: F.interpolate(t, size=(8, 8), mode="nearest"), x)
    raises_like_cpu(lambda t: F.interpolate(t.float(), size=(0, 8), mode="bilinear"), x)
    raises_like_cpu(
        lambda t: torch.ops.aten.upsample_bilinear2d_backward(
            t.float(), [3, 3], [1, 2, 4, 4], False, None, None
        ),
        x,
    )


# ---- pads ----

PAD_SHAPES = {1: (2, 3, 6), 2: (2, 3, 5, 6), 3: (1, 2, 4, 5, 6)}
PADS = {1: (2, 3), 2: (1, 2, 3, 0), 3: (1, 2, 0, 3, 2, 1)}
PAD_DTYPES = [
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    *FLOAT_DTYPES,
    torch.complex64,
]


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", PAD_DTYPES, ids=str)
def test_pad(mode: str, nd: int, dtype: torch.dtype, eager_mode: str) -> None:
    x = make(PAD_SHAPES[nd], dtype)
    native(lambda t: F.pad(t, PADS[nd], mode=mode), x)
    native(lambda t: F.pad(t, PADS[nd], mode=mode), x[0])  # unbatched


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_layouts(mode: str, eager_mode: str) -> None:
    x = specials(make((2, 3, 5, 6), torch.float32))
    native(lambda t: F.pad(t.transpose(2, 3), (2, 1, 1, 3), mode=mode), x)
    native(lambda t: F.pad(t, (-1, 2, 1, -2), mode=mode), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_pad_grad(mode: str, nd: int, dtype: torch.dtype, eager_mode: str) -> None:
    x = make(PAD_SHAPES[nd], dtype)
    grads(lambda t: F.pad(t, PADS[nd], mode=mode), x, **tol(dtype))
    grads(lambda t: F.pad(t, PADS[nd], mode=mode), x[0], **tol(dtype))


def test_pad_out(eager_mode: str) -> None:
    x = make((2, 3, 5, 6), torch.float32)
    out = torch.empty(0)
    native(lambda t, o: torch.ops.aten.reflection_pad2d.out(t, [1, 2, 3, 1], out=o), x, out)
    native(lambda t, o: torch.ops.aten.replication_pad1d.out(t, [3, 1], out=o), x[0], out)
    g = make((2, 3, 9, 9), torch.float32)
    native(lambda t, s: torch.ops.aten.reflection_pad2d_backward(t, s, [1, 2, 3, 1]), g, x)
    native(lambda t, s: torch.ops.aten.replication_pad2d_backward(t, s, [1, 2, 3, 1]), g, x)


def test_pad_errors() -> None:
    x = make((1, 2, 3, 4), torch.float32)
    raises_like_cpu(lambda t: F.pad(t, (4, 0, 0, 0), mode="reflect"), x)
    raises_like_cpu(lambda t: F.pad(t, (0, 0, 3, 0), mode="reflect"), x)
    raises_like_cpu(lambda t: F.pad(t.bool(), (1, 1, 1, 1), mode="replicate"), x)
    raises_like_cpu(lambda t: F.pad(t[:, :0], (1, 1, 1, 1), mode="reflect"), x)
    raises_like_cpu(lambda t: torch.ops.aten.reflection_pad2d(t, [1, 1]), x)
    raises_like_cpu(lambda t: torch.ops.aten.replication_pad2d_backward(t, t, [1, 1, 1, 1]), x)
