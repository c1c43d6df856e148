"""Which installed package holds the PJRT plugin the PJRT driver loads (README, "The PJRT driver").

The driver itself opens the library that TORCH_TPU_PJRT_PLUGIN names; this module turns that
variable into a library path before the driver starts: a path stays as it is, a package name
becomes the plugin library inside that package, and unset, the first installed package of
PJRT_PACKAGES gives it. To support another plugin package, add its import name to PJRT_PACKAGES.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

# In the order they are tried: a TPU VM's libtpu, XLA's CUDA plugin, XLA's CPU plugin.
PJRT_PACKAGES = ("libtpu", "jax_plugins.xla_cuda12", "lammps_jax_pjrt_cpu")


def plugin_in_package(name: str) -> str | None:
    """The PJRT plugin library inside installed package ``name`` (found without importing it)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    libs = sorted(Path(spec.origin).parent.glob("*.so"))
    return str(libs[0]) if libs else None


def hand_over() -> None:
    """Sets TORCH_TPU_PJRT_PLUGIN to a library path when the PJRT driver is selected.

    Nothing found leaves it as it was, and the driver's error says what to install.
    """
    if os.environ.get("TORCH_TPU_DRIVER") != "pjrt":
        return
    given = os.environ.get("TORCH_TPU_PJRT_PLUGIN")
    if given and os.path.sep in given:
        return
    names = (given.replace("-", "_"),) if given else PJRT_PACKAGES
    for name in names:
        path = plugin_in_package(name)
        if path:
            os.environ["TORCH_TPU_PJRT_PLUGIN"] = path
            return
