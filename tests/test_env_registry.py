"""The env-var registry (csrc/core/base/tpu_env.c, read through torch.tpu.env_vars()): every
TORCH_TPU_* name the sources or README mention is registered, registered entries are well formed,
and every registered variable is documented in README.md."""

from __future__ import annotations

import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"\bTORCH_TPU_[A-Z0-9_]*[A-Z0-9]\b")
SOURCE_SUFFIXES = {".c", ".h", ".cpp", ".hpp", ".cc", ".py", ".txt", ".cmake", ".md"}
STAGES = {"stable", "experimental", "testing"}


def names_in(text: str) -> set[str]:
    return set(NAME.findall(text))


def mentioned() -> dict[str, set[str]]:
    """TORCH_TPU_* name -> the files (relative to the repository) that mention it."""
    files = [ROOT / "README.md"]
    for folder in ("csrc", "src"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in SOURCE_SUFFIXES]
    found: dict[str, set[str]] = {}
    for path in files:
        if not path.is_file():
            continue
        for name in names_in(path.read_text(errors="replace")):
            found.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    return found


def registered() -> dict[str, torch.tpu.EnvVar]:  # type: ignore[name-defined]
    return {v.name: v for v in torch.tpu.env_vars()}


def test_name_scanner() -> None:
    text = 'tpu_env_get("TORCH_TPU_FOO_BAR"); os.environ["TORCH_TPU_X2"] TORCH_TPU_ TORCH_TPUX'
    assert names_in(text) == {"TORCH_TPU_FOO_BAR", "TORCH_TPU_X2"}


def test_registry_entries_are_well_formed() -> None:
    entries = torch.tpu.env_vars()
    names = [v.name for v in entries]
    assert len(names) == len(set(names)), "duplicate registrations"
    assert len(entries) >= 4
    for v in entries:
        assert NAME.fullmatch(v.name), v
        assert isinstance(v.default, str) and v.default != "", v
        assert isinstance(v.meaning, str) and len(v.meaning) > 10, v
        assert v.stage in STAGES, v


def test_core_variables_registered() -> None:
    reg = registered()
    for name in (
        "TORCH_TPU_NUM_DEVICES",
        "TORCH_TPU_DEVICE_MEMORY",
        "TORCH_TPU_LAUNCH_BLOCKING",
        "TORCH_TPU_CPU_FALLBACK",
    ):
        assert name in reg, name
        assert reg[name].stage == "stable"


def test_every_mentioned_name_is_registered() -> None:
    found = mentioned()
    assert "TORCH_TPU_CPU_FALLBACK" in found  # the scan sees the sources
    reg = registered()
    missing = {name: sorted(files) for name, files in found.items() if name not in reg}
    assert not missing, f"TORCH_TPU_* names used but not registered in tpu_env.c: {missing}"


def test_registered_names_are_used_by_the_code() -> None:
    # A registered variable nothing reads is dead documentation.
    found = mentioned()
    code_files = {
        name: {f for f in files if not f.endswith(".md") and f != "csrc/core/base/tpu_env.c"}
        for name, files in found.items()
    }
    unused = [name for name in registered() if not code_files.get(name)]
    assert not unused, f"registered but never read outside the registry: {unused}"


def test_every_registered_name_is_documented_in_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    undocumented = [name for name in registered() if name not in names_in(readme)]
    assert not undocumented, f"registered env vars missing from README.md: {undocumented}"
