"""The lint that keeps the binding (csrc/torch) from computing on device memory through ATen's CPU
kernels: an op is native only if it runs through the core's op table (docs/ARCHITECTURE.md).

Every C++ source and header under csrc/torch is scanned with comments and string literals removed.
Each forbidden construct is either absent or on an explicit allowlist of (file, rule, a substring
of the offending line), so a new use anywhere fails until someone reviews it and extends the
allowlist; an allowlist entry that no longer matches anything fails too, so it stays tight."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINDING = ROOT / "csrc" / "torch"

# at::native functions that only compute metadata (views, storage checks) or run ATen's random
# templates with our own functors (which launch core ops): never a CPU kernel.
NATIVE_METADATA_ONLY = {
    "view",
    "as_strided_tensorimpl",
    "_reshape_alias",
    "unfold",
    "view_as_real",
    "view_as_complex",
    "checkSetStorage",
    "templates::random_impl",
    "templates::random_from_to_impl",
    "templates::uniform_impl_",
    "templates::normal_impl_",
    "resize_output",
    # Advanced-indexing bookkeeping from IndexingUtils.h / TensorAdvancedIndexingUtils.h: type
    # checks, views, and masks through the dispatched (native) nonzero.
    "checkIndexTensorTypes",
    "expandTensors",
    "hasContiguousSubspace",
    "transposeToFront",
    "canDispatchToMaskedFill",
    # RangeUtils.h: arange's size and bound checks, from the scalars only.
    "compute_arange_size",
    # bernoulli_'s templates, run with our functors (which launch core ops).
    "templates::bernoulli_impl_",
    "templates::bernoulli_out_impl",
    # Pool.h: pooling output sizes and argument checks, from the sizes and parameters only.
    "pooling_output_shape",
    "pool3d_shape_check",
    # Gelu.h: the parser of gelu's `approximate` argument (raises on an unknown value).
    "get_gelutype_enum",
    "GeluType::Tanh",
    # The distributions' templates, run with our functors (which launch core ops); normal's
    # tensor forms scale and shift through dispatched (native) ops.
    "templates::exponential_impl_",
    "templates::cauchy_impl_",
    "templates::log_normal_impl_",
    "templates::geometric_impl_",
    "templates::normal_impl",
    "templates::normal_out_impl",
    # LinearAlgebraUtils.h: shape, dtype and device checks, broadcast batch sizes and the
    # column-major strides of a result, from the metadata only.
    "batched_matrix_contiguous_strides",
    "squareCheckInputs",
    "checkInputsSolver",
    "_linalg_broadcast_batch_dims",
    "resize_output_check",
    "checkFloatingOrComplex",
    "checkSameDevice",
    "checkLinalgCompatibleDtype",
    "linalg_solve_is_vector_rhs",
    # Bucketization.h and TypeProperties.h: searchsorted's argument checks, the common dtype of
    # its operands, and a scalar value made a 0-d tensor on the device.
    "searchsorted_pre_check",
    "ResultTypeState",
    "update_result_type_state",
    "result_type",
    "searchsorted_scalar_tensor",
    # Padding.h and im2col_shape_check.h: argument and size checks.
    "padding::check_valid_input",
    "im2col_shape_check",
    "col2im_shape_check",
}

RULES: dict[str, re.Pattern[str]] = {
    # ATen's CPU kernels, called directly or through their namespaces and dispatch stubs.
    "at_cpu": re.compile(r"\bat\s*::\s*cpu\s*::"),
    "cpu_fallback": re.compile(r"\bcpu_fallback\b"),
    "native_copy": re.compile(r"\bat\s*::\s*native\s*::\s*copy_?\w*\b"),
    "dispatch_stub": re.compile(r"\w+_stub\s*[(,)]|\b(?:DECLARE|DEFINE|REGISTER)_DISPATCH\b"),
    "cpu_kernel_call": re.compile(r"\b(?!is_cpu\b)\w+_cpu_?\s*\("),
    "cpu_loop": re.compile(r"\b(?:cpu_kernel|cpu_kernel_vec|cpu_serial_kernel)\w*\s*\("),
    "tensor_iterator_build": re.compile(
        r"\bTensorIteratorConfig\b|\bTensorIterator\s*::\s*\w+|\bborrowing_\w+_op\b"
        r"|\b(?:binary|unary|nullary|reduce)_op\s*\("
    ),
    "native_namespace": re.compile(
        r"\busing\s+namespace\s+at\s*::\s*native\b|=\s*at\s*::\s*native\s*;|\bnamespace\s+native\b"
    ),
    "at_native": re.compile(r"\bat\s*::\s*native\s*::\s*([A-Za-z_][\w:]*)"),
    # Raw access to tensor memory and wrapping raw memory as tensors.
    "memcpy": re.compile(r"\b(?:std\s*::\s*)?mem(?:cpy|move|set)\s*\("),
    "from_blob": re.compile(r"\bfrom_blob\s*\("),
    # A tensor's raw data pointer; a storage's DataPtr object (its identity and context) is fine.
    "data_ptr": re.compile(
        r"(?<!storage\(\)\.)(?<!storage->)\b(?:mutable_|const_)?data_ptr\s*(?:<[^>]*>)?\s*\(\s*\)"
        r"(?!\s*\.)"
    ),
    # Running an op's CPU kernel: only the boxed fallback may, on host copies.
    "cpu_redispatch": re.compile(r"\bDispatchKey\s*::\s*CPU\b|\bredispatch\w*\s*\("),
}

# (file relative to csrc/torch, rule) -> substrings of the lines allowed to match, each with why.
ALLOWLIST: dict[tuple[str, str], dict[str, str]] = {
    ("ops/TpuRnnLayers.cpp", "at_native"): {
        "return at::native::lstm(": "ATen's composite LSTM: its GEMMs and cells dispatch to tpu",
        "return at::native::gru(": "ATen's composite GRU: its GEMMs and cells dispatch to tpu",
    },
    ("ops/TpuCopy.cpp", "memcpy"): {
        "std::memcpy(staged, dense.data_ptr(), nbytes)": "staging a CPU tensor into host memory",
    },
    ("ops/TpuCopy.cpp", "data_ptr"): {
        "std::memcpy(staged, dense.data_ptr(), nbytes)": "`dense` is a CPU tensor",
        "isPinnedPtr(t.data_ptr())": "`t` is checked to be a CPU tensor first",
        "record_event(host.data_ptr()": "`host` is a pinned CPU tensor",
    },
    ("ops/TpuCopy.cpp", "from_blob"): {
        "at::from_blob(staged,": "wraps the staged host copy (malloc'ed host memory)",
    },
    ("runtime/TpuCore.cpp", "data_ptr"): {
        "view.host = tensor.data_ptr()": "asserted to be a CPU tensor just above",
    },
    ("dist/TpuDistBackend.cpp", "data_ptr"): {
        "static_cast<char*>(t.data_ptr()) + at": "`t` is checked to be a CPU tensor just above",
        "tpu_comm_host_buf(host.data_ptr()": "`host` is the send's CPU copy of its tensor",
    },
    ("dist/TpuDistBackend.cpp", "memcpy"): {
        "std::memcpy(to_tensor ? data : host": "between a CPU tensor and the shared segment",
    },
    ("runtime/TpuGenerator.cpp", "memcpy"): {
        "std::memcpy(&seed, bytes, sizeof seed)": "reads the CPU RNG state tensor",
        "std::memcpy(&offset, bytes + sizeof seed, sizeof offset)": "reads the CPU RNG state",
        "std::memcpy(bytes, &seed_, sizeof seed_)": "writes the CPU RNG state tensor",
        "std::memcpy(bytes + sizeof seed_, &offset, sizeof offset)": "writes the CPU RNG state",
    },
    ("runtime/TpuGenerator.cpp", "data_ptr"): {
        "state.data_ptr<uint8_t>()": "`state` is a new CPU byte tensor",
    },
    ("runtime/TpuHostAllocator.cpp", "memcpy"): {
        "std::memcpy(dest, src, count)": "copy_data of pinned host memory",
    },
    ("ops/TpuAttention.cpp", "dispatch_stub"): {
        "REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_tpu::sdp_choice)": (
            "registers tpu's own backend choice (an enum from the inputs' metadata), which the "
            "scaled_dot_product_attention composite reads only through this stub"
        ),
    },
    ("ops/TpuComplex.cpp", "tensor_iterator_build"): {
        "at::TensorIteratorConfig()": (
            "complex_out and polar_out build ATen's iterator only to check, size and lay out "
            "their output (as CPU's complex_out does); no stub runs, native copies compute"
        ),
    },
    ("ops/TpuFrexp.cpp", "tensor_iterator_build"): {
        "at::TensorIteratorConfig()": (
            "frexp_out builds ATen's iterator only to check, size and lay out its two outputs "
            "(as CPU's frexp_out does); no stub runs, native integer ops compute"
        ),
    },
    ("ops/TpuElementwiseMisc.cpp", "tensor_iterator_build"): {
        "at::TensorIteratorConfig()": (
            "where_out builds ATen's where iterator only to size and lay out its output (as "
            "where_self_out does); no stub runs, the core's WHERE op computes"
        ),
    },
    ("ops/TpuFallback.cpp", "cpu_redispatch"): {
        "op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack)": (
            "the one boxed fallback, after moving every argument to the host"
        ),
    },
}

# Findings that are known violations, reported to the lead as bugs: (file, rule, substring).


@dataclass(frozen=True)
class Finding:
    file: str
    line_no: int
    rule: str
    line: str
    detail: str = ""

    def __str__(self) -> str:
        extra = f" [{self.detail}]" if self.detail else ""
        return f"csrc/torch/{self.file}:{self.line_no}: {self.rule}{extra}: {self.line.strip()}"


def strip_comments_and_strings(text: str) -> str:
    """Blanks out comments and string/char literals, keeping line breaks (and so line numbers)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            while i < n and text[i] != "\n":
                i += 1
        elif c == "/" and nxt == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:end]))
            i = end
        elif c == "R" and nxt == '"':
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if m:
                close = ")" + m.group(1) + '"'
                end = text.find(close, i + m.end())
                end = n if end < 0 else end + len(close)
                out.append('R""' + "\n" * text[i:end].count("\n"))
                i = end
            else:
                out.append(c)
                i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scan(rel: str, text: str) -> list[Finding]:
    """Every forbidden construct in one source file (rel: its path relative to csrc/torch)."""
    code_lines = strip_comments_and_strings(text).split("\n")
    raw_lines = text.split("\n")
    findings: list[Finding] = []
    for no, (code, raw) in enumerate(zip(code_lines, raw_lines, strict=True), start=1):
        if code.lstrip().startswith("#include"):
            continue
        for rule, pattern in RULES.items():
            for m in pattern.finditer(code):
                if rule == "at_native":
                    name = re.sub(r"\s+", "", m.group(1))
                    if name in NATIVE_METADATA_ONLY:
                        continue
                    findings.append(Finding(rel, no, rule, raw, name))
                else:
                    findings.append(Finding(rel, no, rule, raw))
    return findings


def allowed(f: Finding) -> bool:
    entries = ALLOWLIST.get((f.file, f.rule), {})
    return any(sub in f.line for sub in entries)


def binding_files() -> list[Path]:
    return sorted(p for p in BINDING.rglob("*") if p.suffix in {".cpp", ".h", ".hpp", ".cc"})


def rel(path: Path) -> str:
    return path.relative_to(BINDING).as_posix()


def file_params() -> list[object]:
    return [pytest.param(rel(path), id=rel(path)) for path in binding_files()]


def test_binding_sources_exist() -> None:
    names = [rel(p) for p in binding_files()]
    for expected in ("ops/TpuFallback.cpp", "ops/TpuCopy.cpp", "runtime/TpuCore.cpp"):
        assert expected in names
    assert len(names) >= 10


@pytest.mark.parametrize("name", file_params())
def test_no_cpu_compute_on_device_memory(name: str) -> None:
    text = (BINDING / name).read_text()
    bad = [f for f in scan(name, text) if not allowed(f)]
    assert not bad, "forbidden constructs in the binding:\n" + "\n".join(map(str, bad))


def test_allowlist_entries_are_used() -> None:
    findings = [f for p in binding_files() for f in scan(rel(p), p.read_text())]
    stale = []
    for (file, rule), entries in ALLOWLIST.items():
        for sub in entries:
            if not any(f.file == file and f.rule == rule and sub in f.line for f in findings):
                stale.append(f"{file} {rule}: {sub!r}")
    assert not stale, "allowlist entries that match nothing (remove them):\n" + "\n".join(stale)


# ---------------------------------------------------------------------------------------------
# Self-test: the scanner flags each forbidden construct and ignores comments and strings.

BAD_SAMPLES = {
    "at_cpu": "auto r = at::cpu::add(a, b);",
    "cpu_fallback": "at::native::cpu_fallback(op, stack);",
    "native_copy": "at::native::copy_(dst, src, false);",
    "dispatch_stub": "add_stub(iter.device_type(), iter, alpha);",
    "cpu_kernel_call": "return at::native::index_select_out_cpu_(self, dim, index, out);",
    "cpu_loop": "cpu_kernel(iter, [](float a) { return a; });",
    "tensor_iterator_build": "auto iter = at::TensorIteratorConfig().add_output(out).build();",
    "native_namespace": "using namespace at::native;",
    "at_native": "return at::native::add(self, other);",
    "memcpy": "std::memcpy(dst.data_ptr(), src.data_ptr(), n);",
    "from_blob": "auto t = at::from_blob(device_ptr, sizes, opts);",
    "data_ptr": "float* p = t.data_ptr<float>();",
    "cpu_redispatch": "add_Tensor::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), a, b);",
}


@pytest.mark.parametrize("rule", list(BAD_SAMPLES))
def test_scanner_flags_forbidden_line(rule: str) -> None:
    findings = scan("ops/New.cpp", "#include <x.h>\nvoid f() {\n  " + BAD_SAMPLES[rule] + "\n}\n")
    assert rule in {f.rule for f in findings}, findings
    assert all(f.line_no == 3 for f in findings)
    assert not any(allowed(f) for f in findings)


def test_scanner_covers_every_rule() -> None:
    assert set(BAD_SAMPLES) == set(RULES)


def test_scanner_ignores_comments_strings_and_allowed_natives() -> None:
    text = "\n".join(
        [
            "#include <ATen/native/Resize.h>",
            "// at::cpu::add(a, b) and memcpy(p, q, n) in a comment",
            "/* at::native::add(a, b);",
            "   from_blob(p, s) */",
            'TORCH_CHECK(ok, "random_ uses add_stub( and at::cpu:: in a message");',
            'm.impl("view", TORCH_FN(at::native::view));',
            "return at::native::templates::random_impl<K, G*>(self, gen);",
            "bool host = t.is_cpu();",
            "auto* b = static_cast<tpu_buffer*>(t.storage().data_ptr().get_context());",
            "guard->recordDataPtrOnStream(self.storage().data_ptr(), stream);",
        ]
    )
    assert scan("ops/Clean.cpp", text) == []


def test_allowlist_is_specific_to_file() -> None:
    line = "  std::memcpy(staged, dense.data_ptr(), nbytes);"
    findings = scan("ops/Other.cpp", line)
    assert {f.rule for f in findings} == {"memcpy", "data_ptr"}
    assert not any(allowed(f) for f in findings)
    assert all(allowed(f) for f in scan("ops/TpuCopy.cpp", line))
