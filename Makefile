# The two commands: `make demo` and `make test`. Both set up .venv first (`make setup`), and are
# fast the second time: the install reruns only when a source file changed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DEPS_STAMP := $(VENV)/.deps-installed
INSTALL_STAMP := $(VENV)/.torch-tpu-installed
SOURCES := $(shell find csrc src -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.py' \)) CMakeLists.txt pyproject.toml
JOBS ?= $(shell nproc)
# XLA's CPU plugin for the PJRT driver's tests; it declares a jax dependency it does not need.
PJRT_CPU_PLUGIN := lammps-jax-pjrt-cpu==0.11.2
# What make pytest-pjrt runs on the PJRT driver: its own tests, elementwise ops, matmuls (int_mm too),
# reductions, index ops, optimizer steps, norms, nn and attention ops, views, copies, complex
# construction and frexp, conjugate and negative views, the CPU fallback's host mirror, argument checks, the
# models (trained against CPU), fused and debug modes, recompile reasons, random draws, recurrent cells, sorting,
# isin and multinomial sampling, tpu_dist, torch.compile;
# the rest of the suite runs on the host driver. It runs in four groups, one pytest each: XLA's
# CPU plugin maps memory for every executable the driver keeps, and a worker that compiled the
# whole list would reach the kernel's bound on mappings (vm.max_map_count).
PJRT_GROUP_1 := tests/test_pjrt.py tests/test_ops_elementwise.py tests/test_ops_matmul.py \
	tests/test_views.py tests/test_copy.py tests/test_ops_number_parts.py tests/test_ops_quantized.py
PJRT_GROUP_2 := tests/test_ops_reduce.py tests/test_ops_reduce_stats.py tests/test_ops_index.py \
	tests/test_ops_index_shape.py tests/test_ops_optim.py tests/test_ops_norm.py \
	tests/test_math_bits.py tests/test_fallback_mirror.py tests/test_arg_checks.py \
	tests/test_models.py tests/test_ops_nn.py tests/test_ops_attention.py \
	tests/test_ops_attention_grad.py tests/test_fused.py tests/test_debug_mode.py \
	tests/test_recompiles.py
PJRT_GROUP_3 := tests/test_random.py tests/test_dist.py \
	tests/test_compile.py tests/test_pjrt_devices.py tests/test_ops_sort.py \
	tests/test_ops_sampling.py tests/test_ops_search.py tests/test_ops_linalg.py \
	tests/test_ops_nn_losses.py
# The recurrent nets alone: their layers' tests compile many shapes, and with group 3's files a
# worker crashed near the bound.
PJRT_GROUP_4 := tests/test_ops_conv_rnn.py

.PHONY: setup demo test core-tests core-tests-sanitized core-tests-tsan fault-injection fuzz-core fuzz soak pytest pytest-pjrt pytest-pjrt-models lint bench bench-full clean

setup: $(INSTALL_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(DEPS_STAMP): $(PY) requirements-dev.txt
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -r requirements-dev.txt
	$(PIP) install -q --no-deps $(PJRT_CPU_PLUGIN)
	touch $@

# Warnings are errors here (and so in CI), not in a user's plain `pip install .`.
$(INSTALL_STAMP): $(DEPS_STAMP) $(SOURCES)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PIP) install -q --no-build-isolation --no-deps \
		-Ccmake.define.TPU_WERROR=ON .
	touch $@

# The single-process job, then DDP on two ranks through tpu_dist (examples/ddp.py).
demo: setup
	$(PY) examples/train_gpt.py
	$(VENV)/bin/torchrun --nproc-per-node=2 examples/ddp.py

# The installed CPU plugin (found when the recipe runs, after setup): the plain and ASan/UBSan C
# tests run the PJRT driver's tests on it (the plugin's own allocations are not ours to check:
# csrc/core/tests/lsan.supp); the TSan build skips them (the plugin is not instrumented).
PJRT_PLUGIN_LIB = $(shell ls $(CURDIR)/$(VENV)/lib/python*/site-packages/lammps_jax_pjrt_cpu/*.so 2>/dev/null | head -1)

core-tests: $(DEPS_STAMP)
	cmake -S . -B build/core -G Ninja -DTPU_BUILD_EXTENSION=OFF -DTPU_WERROR=ON >/dev/null
	cmake --build build/core -j $(JOBS)
	$(if $(PJRT_PLUGIN_LIB),TORCH_TPU_PJRT_PLUGIN=$(PJRT_PLUGIN_LIB)) \
		ctest --test-dir build/core --output-on-failure

core-tests-sanitized: $(DEPS_STAMP)
	cmake -S . -B build/core-sanitized -G Ninja -DTPU_BUILD_EXTENSION=OFF -DTPU_WERROR=ON \
		-DTPU_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build/core-sanitized -j $(JOBS)
	$(if $(PJRT_PLUGIN_LIB),TORCH_TPU_PJRT_PLUGIN=$(PJRT_PLUGIN_LIB)) \
	LSAN_OPTIONS=suppressions=$(CURDIR)/csrc/core/tests/lsan.supp \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir build/core-sanitized --output-on-failure

# ThreadSanitizer over the same tests (streams' workers, the host driver's pool and the threads
# that launch), optimized as TSan advises: at -O0 it runs several times slower. The first report
# fails the test; there are no suppressions.
core-tests-tsan: $(DEPS_STAMP)
	cmake -S . -B build/core-tsan -G Ninja -DTPU_BUILD_EXTENSION=OFF -DTPU_WERROR=ON \
		-DTPU_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build/core-tsan -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --test-dir build/core-tsan --output-on-failure

# Each allocation of the core failed in turn (csrc/core/tests/fault_injection.c), under ASan and
# UBSan so that a leak or a stale pointer a failure leaves behind is caught.
fault-injection: $(DEPS_STAMP)
	cmake -S . -B build/fault -G Ninja -DTPU_BUILD_EXTENSION=OFF -DTPU_WERROR=ON \
		-DTPU_SANITIZE=ON -DTPU_FAULT_INJECTION=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build/fault -j $(JOBS) --target test_fault_injection
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir build/fault -R '^test_fault_injection$$' --output-on-failure

# Coverage-guided fuzzing of the core (csrc/core/fuzz/README.md): clang builds the libFuzzer targets
# under ASan and UBSan (apt-get installs it when missing, as setup installs the Python packages),
# then each target runs FUZZ_CORE_SECONDS over its committed seed corpus; a crash, a leak or a
# broken check fails, its reproducer left in build/fuzz/crashes. `make test` runs each for
# FUZZ_CORE_TEST_SECONDS.
FUZZ_CORE_SECONDS ?= 60
FUZZ_CORE_TEST_SECONDS ?= 20
FUZZ_CORE_TARGETS := fuzz_view fuzz_iter fuzz_graph

fuzz-core:
	@command -v clang >/dev/null || { apt-get update -qq && apt-get install -y -qq clang >/dev/null; }
	cmake -S . -B build/fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DTPU_BUILD_EXTENSION=OFF \
		-DTPU_LIBFUZZER=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build/fuzz -j $(JOBS) --target $(FUZZ_CORE_TARGETS)
	@mkdir -p build/fuzz/crashes
	@for t in $(FUZZ_CORE_TARGETS); do \
		mkdir -p build/fuzz/corpus/$$t; \
		echo "fuzz-core: $$t for $(FUZZ_CORE_SECONDS) s"; \
		build/fuzz/csrc/core/fuzz/$$t -max_total_time=$(FUZZ_CORE_SECONDS) -timeout=10 \
			-print_final_stats=1 -artifact_prefix=build/fuzz/crashes/$$t- \
			build/fuzz/corpus/$$t csrc/core/fuzz/corpus/$$t >build/fuzz/$$t.log 2>&1 \
			|| { tail -n 80 build/fuzz/$$t.log; exit 1; }; \
		grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' build/fuzz/$$t.log; \
	done

pytest: setup
	$(VENV)/bin/pytest -q -n $(JOBS) --dist loadfile --max-worker-restart=0 --durations=15

# The PJRT driver on XLA's CPU plugin (TORCH_TPU_PJRT_PLUGIN names the installed package).
pytest-pjrt: setup
	@for group in "$(PJRT_GROUP_1)" "$(PJRT_GROUP_2)" "$(PJRT_GROUP_3)" "$(PJRT_GROUP_4)"; do \
		echo "pytest-pjrt: $$group"; \
		TORCH_TPU_DRIVER=pjrt TORCH_TPU_PJRT_PLUGIN=lammps_jax_pjrt_cpu \
			$(VENV)/bin/pytest -q -n $(JOBS) --dist loadfile --max-worker-restart=0 --durations=10 \
				$$group || exit 1; \
	done

# The Hugging Face models and the OpInfo sweep on the PJRT driver, one pytest per sweep
# configuration: the driver keeps every executable, and a worker that compiled two sweeps' came
# near vm.max_map_count and crashed. Not part of make test: about 40 minutes on 2 cores.
pytest-pjrt-models: setup
	@for args in tests/test_hf_models.py "tests/test_opinfo_sweep.py -k float32-strict" \
			"tests/test_opinfo_sweep.py -k float32-fused" "tests/test_opinfo_sweep.py -k float32-debug" \
			"tests/test_opinfo_sweep.py -k bfloat16-strict"; do \
		TORCH_TPU_DRIVER=pjrt TORCH_TPU_PJRT_PLUGIN=lammps_jax_pjrt_cpu \
			$(VENV)/bin/pytest -q -n $(JOBS) --dist loadfile --max-worker-restart=0 $$args || exit 1; \
	done

# The layers (docs/ARCHITECTURE.md): the core's includes point down its layers, and the core and
# the binding reach a driver only through drivers/tpu_driver.h (tests/lint_layers.py).
lint: $(DEPS_STAMP)
	$(PY) tests/lint_layers.py
	$(VENV)/bin/ruff check src tests examples bench
	$(VENV)/bin/ruff format --check src tests examples bench

test: FUZZ_CORE_SECONDS = $(FUZZ_CORE_TEST_SECONDS)
test: core-tests core-tests-sanitized core-tests-tsan fault-injection fuzz-core lint pytest pytest-pjrt

bench: setup
	$(PY) -m bench.run --quick

bench-full: setup
	$(PY) -m bench.run --full

# The differential fuzzer (tests/fuzz/): random op programs on CPU and on tpu in every eager mode,
# each difference grouped, shrunk and printed as a reproducer; fails on a difference that
# tests/fuzz/known.py does not list. FUZZ_SECONDS is the budget: the default runs about 390,000
# programs in each of debug, strict and fused mode on one core (see tests/fuzz/__init__.py).
FUZZ_SECONDS ?= 420
FUZZ_SEED ?= 20
FUZZ_JOBS ?= 1
fuzz: setup
	$(PY) -m tests.fuzz --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED) --jobs $(FUZZ_JOBS)

# The soak test (tests/soak.py, not in CI): gpt-tiny trained SOAK_MINUTES in each eager mode with
# random host reads and synchronizations; memory must stay flat and every check step match CPU.
SOAK_MINUTES ?= 60
soak: setup
	$(PY) -m tests.soak --minutes $(SOAK_MINUTES)

clean:
	rm -rf build
