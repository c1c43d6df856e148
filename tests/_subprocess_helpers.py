"""Runs a snippet of Python in a fresh interpreter, for settings that must precede ``import torch``
(environment variables read once at load time)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping


def run_python(
    code: str, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Runs ``sys.executable -c code`` with ``env`` added to the current environment.

    The child runs from a temporary directory so the source tree never shadows the installed
    package. Returns the completed process (stdout, stderr and returncode) without raising.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=full_env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def check_python(
    code: str, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Like ``run_python``, but fails the calling test (with the child's output) on a non-zero
    exit status."""
    result = run_python(code, env, timeout)
    assert result.returncode == 0, (
        f"child exited with {result.returncode}\n"
        f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    )
    return result
