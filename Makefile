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

.PHONY: setup demo test core-tests core-tests-sanitized pytest lint bench bench-full clean

setup: $(INSTALL_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(DEPS_STAMP): $(PY) requirements-dev.txt
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -r requirements-dev.txt
	touch $@

# Warnings are errors here (and so in CI), not in a user's plain `pip install .`.
$(INSTALL_STAMP): $(DEPS_STAMP) $(SOURCES)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PIP) install -q --no-build-isolation --no-deps \
		-Ccmake.define.TPU_WERROR=ON .
	touch $@

demo: setup
	$(PY) examples/train_gpt.py

core-tests: $(DEPS_STAMP)
	cmake -S . -B build/core -G Ninja -DTPU_BUILD_EXTENSION=OFF -DTPU_WERROR=ON >/dev/null
	cmake --build build/core -j $(JOBS)
	ctest --test-dir build/core --output-on-failure

core-tests-sanitized: $(DEPS_STAMP)
	cmake -S . -B build/core-sanitized -G Ninja -DTPU_BUILD_EXTENSION=OFF -DTPU_WERROR=ON \
		-DTPU_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build/core-sanitized -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir build/core-sanitized --output-on-failure

pytest: setup
	$(VENV)/bin/pytest -q -n $(JOBS) --dist loadfile

# The layers (docs/ARCHITECTURE.md): the core and the binding reach a driver only through
# drivers/tpu_driver.h, never through a header of a driver's own folder.
CORE_LAYER := csrc/core/base csrc/core/exec csrc/core/graph csrc/core/mem csrc/core/ops \
	csrc/core/tensor csrc/core/include csrc/core/drivers/tpu_driver.h csrc/core/drivers/tpu_driver.c

lint: $(DEPS_STAMP)
	@if grep -rnE '#include "(core/)?drivers/[^"/]+/' $(CORE_LAYER) csrc/torch; then \
		echo "lint: the lines above include a driver's header from the core or the binding"; \
		exit 1; fi
	$(VENV)/bin/ruff check src tests examples bench
	$(VENV)/bin/ruff format --check src tests examples bench

test: core-tests core-tests-sanitized lint pytest

bench: setup
	$(PY) -m bench.run --quick

bench-full: setup
	$(PY) -m bench.run --full

clean:
	rm -rf build
