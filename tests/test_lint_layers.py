"""The layer check of `make lint` (tests/lint_layers.py) passes on the tree and fails on each kind
of include it exists to refuse."""

from __future__ import annotations

import pytest

from tests.lint_layers import check_file, check_tree


def test_the_tree_points_one_way() -> None:
    assert check_tree() == []


@pytest.mark.parametrize(
    ("rel", "include"),
    [
        ("tensor/tpu_buffer.c", "ops/tpu_op.h"),  # a buffer launching an op
        ("mem/tpu_allocator.c", "exec/tpu_submit.h"),
        ("device/tpu_device.c", "mem/tpu_reserve.h"),
        ("drivers/tpu_driver.h", "ops/tpu_op.h"),  # the interface names core types by pointer
        ("graph/tpu_graph.c", "exec/tpu_fused.h"),
        ("ops/tpu_op.c", "drivers/tpu_drivers.h"),  # only the top knows the built-in drivers
        ("exec/tpu_fused.c", "drivers/host/host_driver.h"),  # a driver's own header
        ("drivers/pjrt/tpu_pjrt_driver.c", "drivers/host/host_driver.h"),
        ("drivers/host/host_driver.c", "exec/tpu_submit.h"),
        ("drivers/host/host.h", "ops/tpu_op.h"),  # a public header holds names and types only
    ],
)
def test_an_upward_include_is_refused(rel: str, include: str) -> None:
    assert check_file(rel, f'#include "{include}"\n')


def test_the_binding_never_includes_a_drivers_own_header() -> None:
    assert check_file("ops/TpuCopy.cpp", '#include "core/drivers/host/host_driver.h"\n', True)
    assert not check_file("ops/TpuCopy.cpp", '#include "core/include/tpu.h"\n', True)
    assert not check_file("ops/TpuMatmul.cpp", '#include "core/drivers/host/host.h"\n', True)


def test_includes_within_and_below_a_layer_pass() -> None:
    assert not check_file(
        "exec/tpu_fused.c", '#include "graph/tpu_graph.h"\n#include "exec/tpu_remat.h"\n'
    )
    assert not check_file(
        "drivers/host/host_driver.c", '#include "drivers/host/kernels/kernels.h"\n'
    )
    assert not check_file("tests/test_fuse.c", '#include "drivers/host/fuse/fuse.h"\n')
