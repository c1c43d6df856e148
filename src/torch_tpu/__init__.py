"""torch_tpu: a native PyTorch backend for TPU-class accelerators.

``import torch`` loads it through the ``torch.backends`` entry point (opt out with
``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` and ``import torch_tpu`` by hand). Loading registers the
``tpu`` device: the PrivateUse1 key renamed, ``torch.tpu``, ``Tensor.tpu()`` and ``is_tpu``.
Nothing starts a thread or reserves memory until the device is first used.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
from pathlib import Path


def _autoload() -> None:
    """Entry point for ``torch.backends``, which torch calls at the end of ``import torch``.

    Loading the entry point imports this module, whose last line registers the device, so there
    is nothing left to do here. It is defined before ``import torch`` because ``import torch_tpu``
    run first reaches torch's autoload while this module is still half imported.
    """


import torch  # noqa: E402  (after _autoload, see there)

_registered = False


def _register() -> None:
    global _registered
    if _registered:
        return
    _hand_over_pjrt_plugin()
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


# Packages that hold a PJRT plugin, in the order the PJRT driver looks for them: a TPU VM's libtpu,
# XLA's CUDA plugin, XLA's CPU plugin.
_PJRT_PACKAGES = ("libtpu", "jax_plugins.xla_cuda12", "lammps_jax_pjrt_cpu")


def _plugin_in_package(name: str) -> str | None:
    """The PJRT plugin library inside installed package ``name`` (found without importing it)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    libs = sorted(Path(spec.origin).parent.glob("*.so"))
    return str(libs[0]) if libs else None


def _hand_over_pjrt_plugin() -> None:
    """Turns TORCH_TPU_PJRT_PLUGIN into a library path for the PJRT driver before it starts.

    A path stays as it is; a package name becomes the plugin inside it; unset, the first installed
    package of _PJRT_PACKAGES. Nothing found leaves it unset, and the driver's error says what to
    install.
    """
    if os.environ.get("TORCH_TPU_DRIVER") != "pjrt":
        return
    given = os.environ.get("TORCH_TPU_PJRT_PLUGIN")
    if given and os.path.sep in given:
        return
    names = (given.replace("-", "_"),) if given else _PJRT_PACKAGES
    for name in names:
        path = _plugin_in_package(name)
        if path:
            os.environ["TORCH_TPU_PJRT_PLUGIN"] = path
            return


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
