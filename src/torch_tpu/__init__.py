"""torch_tpu: a native PyTorch backend for TPU-class accelerators.

``import torch`` loads it through the ``torch.backends`` entry point (opt out with
``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` and ``import torch_tpu`` by hand). Loading registers the
``tpu`` device: the PrivateUse1 key renamed, ``torch.tpu``, ``Tensor.tpu()`` and ``is_tpu``.
Nothing starts a thread or reserves memory until the device is first used.
"""

from __future__ import annotations

import atexit
import importlib.util
from pathlib import Path


def _autoload() -> None:
    """Entry point for ``torch.backends``, which torch calls at the end of ``import torch``.

    Loading the entry point imports this module, whose last line registers the device, so there
    is nothing left to do here. It is defined before ``import torch`` because ``import torch_tpu``
    run first reaches torch's autoload while this module is still half imported.
    """


import torch  # noqa: E402  (after _autoload, see there)

from . import _pjrt_plugin  # noqa: E402

_registered = False


def _register() -> None:
    global _registered
    if _registered:
        return
    _pjrt_plugin.hand_over()
    # Before _C: its tpu_dist backend class derives from torch.distributed's Backend.
    import torch.distributed

    from . import _C  # noqa: F401  (loads the native runtime and its registrations)
    from . import tpu as device_module

    torch.utils.rename_privateuse1_backend("tpu")
    torch._register_device_module("tpu", device_module)
    # Registered first, so that it runs after every later atexit handler.
    atexit.register(device_module._drain_autograd_threads)
    torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
    _hand_over_blas()
    if torch.distributed.is_available():
        from . import distributed

        distributed.register()
    from . import compile as _compile

    _compile.route_default_compiler()
    _registered = True


def _hand_over_blas() -> None:
    """Tells the core where scipy-openblas32's library is; it is opened on the first GEMM.

    Found without importing the package (import stays light); without it the built-in GEMM runs.
    """
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or spec.origin is None:
        return
    libs = sorted((Path(spec.origin).parent / "lib").glob("libscipy_openblas*.so*"))
    if libs:
        torch.ops.torch_tpu._set_blas_library(str(libs[0]))


_register()

__all__ = ["_autoload"]
