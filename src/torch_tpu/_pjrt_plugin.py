"""Which driver and PJRT plugin a process uses when nothing says (README, "The PJRT driver").

The driver itself opens the library that TORCH_TPU_PJRT_PLUGIN names; this module runs before the
driver starts and settles two things:

- With TORCH_TPU_DRIVER unset, a TPU host (the ``libtpu`` package installed and a TPU device node,
  ``/dev/accel*`` or ``/dev/vfio``) gets the PJRT driver with libtpu; any other machine keeps the
  host driver.
- With the PJRT driver selected, TORCH_TPU_PJRT_PLUGIN becomes a library path: a path stays as it
  is, a package name becomes the plugin library inside that package, and unset, the first
  installed package of PJRT_PACKAGES gives it. To support another plugin package, add its import
  name to PJRT_PACKAGES.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

# In the order they are tried: a TPU VM's libtpu, XLA's CUDA plugin, XLA's CPU plugin.
PJRT_PACKAGES = ("libtpu", "jax_plugins.xla_cuda12", "lammps_jax_pjrt_cpu")

# Where a TPU VM's chips appear: /dev/accel0.. (TPU v4 and later) or VFIO groups (v5e, v6e).
DEVICE_ROOT = Path("/dev")


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


def tpu_host_plugin() -> str | None:
    """libtpu's library when this machine has TPU chips and libtpu is installed, else None."""
    if not (any(DEVICE_ROOT.glob("accel*")) or (DEVICE_ROOT / "vfio").exists()):
        return None
    return plugin_in_package("libtpu")


def hand_over() -> None:
    """Chooses the PJRT driver on a TPU host and sets TORCH_TPU_PJRT_PLUGIN to a library path
    when the PJRT driver is selected.

    Nothing found leaves the plugin variable as it was, and the driver's error says what to install.
    """
    if "TORCH_TPU_DRIVER" not in os.environ:
        libtpu = tpu_host_plugin()
        if libtpu:
            os.environ["TORCH_TPU_DRIVER"] = "pjrt"
            os.environ.setdefault("TORCH_TPU_PJRT_PLUGIN", libtpu)
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
