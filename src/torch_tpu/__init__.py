"""torch_tpu: a native PyTorch backend for TPU-class accelerators.

``import torch`` loads it through the ``torch.backends`` entry point (opt out with
``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` and ``import torch_tpu`` by hand). Loading registers the
``tpu`` device: the PrivateUse1 key renamed, ``torch.tpu``, ``Tensor.tpu()`` and ``is_tpu``.
Nothing starts a thread or reserves memory until the device is first used.
"""

from __future__ import annotations

import torch

_registered = False


def _register() -> None:
    global _registered
    if _registered:
        return
    from . import _C  # noqa: F401  (loads the native runtime and its registrations)
    from . import tpu as device_module

    torch.utils.rename_privateuse1_backend("tpu")
    torch._register_device_module("tpu", device_module)
    torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
    _registered = True


def _autoload() -> None:
    """Entry point for ``torch.backends``: runs at the end of ``import torch``."""
    _register()


_register()

__all__ = ["_autoload"]
