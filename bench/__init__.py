"""bench: torch-tpu's measuring instrument (issue 3).

Every performance figure of the project comes from here: the tpu device and its alternatives run on
the same machine in the same run, results are reported as ratios, and the machine's own limits
(memory bandwidth, FMA peak, BLAS) are measured alongside so each figure can be read as a fraction
of what the hardware allows. Entry point: ``python -m bench.run --quick|--full``.
"""

import sys as _sys
from pathlib import Path as _Path

# `python -m bench.run` puts the repository root first on sys.path, where the torch_tpu *source*
# tree (without its compiled _C) would shadow the package `make setup` installed, and torch's
# autoload would import the wrong one. bench measures the installed build, so the root moves to the
# end of sys.path: bench's own submodules still resolve through bench.__path__.
_ROOT = str(_Path(__file__).resolve().parent.parent)
_entries = [p for p in _sys.path if p in ("", ".", _ROOT)]
if _entries and _sys.path[0] in _entries:
    _sys.path[:] = [p for p in _sys.path if p not in _entries] + [_ROOT]
