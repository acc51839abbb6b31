# refsim: every target creates or reuses .venv and installs what it needs.
# `make demo` runs the main job on a bundled model; `make test` passes the tests.

PYTHON ?= python3
# bash: `make test` reads each suite's exit status through a pipe (PIPESTATUS).
SHELL  := /bin/bash
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Debian packages for kernels_c (QEMU runs of the C kernels); installed only when missing.
# flatbuffers-compiler gives flatc, which cross-checks our .pte schema in the tests.
# gcc (host) builds the QEMU instruction-counting plugin; llvm-19 gives llvm-mca-19 and llvm-mc-19,
# which time each executed block for the instruction-timed cycles (--count-cycles).
APT_PACKAGES := gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm flatbuffers-compiler gcc llvm-19
# C++ headers for arm-none-eabi-g++: the sizeof probe of refsim/lab/executorch (tests/interop/test_sizeof.py).
APT_PACKAGES += libstdc++-arm-none-eabi-newlib
# cmake builds a CMSIS-NN checkout with its own CMake project (refsim conformance/calibrate --kernels-dir).
APT_PACKAGES += cmake
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_WORKERS ?= 2

INTEROP_VENV ?= .venv-interop
IPY := $(INTEROP_VENV)/bin/python
# Tests that need the real ExecuTorch (exporter and runtime) run in the interop venv.
INTEROP_TESTS := tests/pte/test_interop.py tests/interop
# The compiler's tests need torch + torchao (the `compile` extra), and its interop comparisons
# ExecuTorch: they run in the interop venv too (in .venv they skip; the planner's tests run there).
INTEROP_TESTS += tests/compiler/test_zoo.py tests/compiler/test_cli.py tests/compiler/test_pipeline.py \
  tests/compiler/test_interop_executorch.py
INTEROP_TESTS += tests/compiler/test_fp32_fallback.py

.PHONY: aot demo test test-main test-example test-interop lint bench pte-fixtures apt-deps venv venv-interop clean conformance-long

venv: $(VENV)/.installed
venv-interop: $(INTEROP_VENV)/.installed

# torch is not needed by the runtime or the tests of the golden numerics; the `compile`
# extra (torch==2.13.0, a local CPU wheel on our machines) is installed by targets that need it.
# fast: ONNX Runtime's integer GEMM for batched runs (refsim.runtime.igemm), so its tests run.
# cluster: Ray, so the tests of `refsim sweep --ray` run against a real local Ray instance
# (plain ray, ~240 MB, under a minute to install; no dashboard).
# compileall: bytecode for the editable install (pip compiles only site-packages); with
# PYTHONDONTWRITEBYTECODE set every import would compile (the first cycle estimate ~2x slower).
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,cluster,fast]'
	$(PY) -m compileall -q -j 0 refsim isa_models kernels_py compiler
	$(MAKE) aot
	touch $@

# The golden kernels compiled ahead of time (refsim.aot: numba's pycc, into the user cache, keyed by
# a hash of kernels_py), so that `refsim run` starts without importing numba; a no-op when current.
# Without it (no C compiler, or kernels_py edited since) everything runs on numba's JIT, unchanged.
aot:
	$(PY) -m refsim.aot || echo "refsim.aot: not built; the kernels run on numba's JIT"

# torch first, pinned, so executorch's own dependency on torch is already satisfied by the
# local CPU wheel (an unpinned torch would download a CUDA build).
$(INTEROP_VENV)/.installed: pyproject.toml
	test -x $(IPY) || $(PYTHON) -m venv $(INTEROP_VENV)
	$(IPY) -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(IPY) -m pip install --quiet --disable-pip-version-check -e '.[test,interop]'
	touch $@

apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The main job on a bundled model: what the KWS program holds, then one bit-exact inference with
# its cycle estimate on a Cortex-M55 (the real CMSIS-NN's calibration). Then the compiler: KWS from
# PyTorch to a cortex-m55 program (torch lives in the interop venv), run and estimated by the
# torch-free runtime.
demo: venv venv-interop
	$(VENV)/bin/refsim inspect examples/models/kws.pte
	$(VENV)/bin/refsim run examples/models/kws.pte --inputs examples/models/kws.io.npz --isa mve --estimate-cycles \
	  --plot build/kws_cycles.png --json build/kws_report.json
	@echo "report: build/kws_report.json"
	$(INTEROP_VENV)/bin/refsim compile zoo:kws --target cortex-m55 -o build/kws_m55.pte --json build/kws_compile.json
	$(VENV)/bin/refsim run build/kws_m55.pte --estimate-cycles --json build/kws_m55_report.json
	@echo "compile report: build/kws_compile.json, run report: build/kws_m55_report.json"

# The suites (main, the example user project of examples/kernel_tests, interop) all run even when one
# fails; each log is kept in build/, the pytest summaries are printed again at the end with their sum,
# and the exit status is non-zero if any failed.
test: venv venv-interop apt-deps
	@mkdir -p build; status=0; \
	$(MAKE) --no-print-directory test-main 2>&1 | tee build/test-main.log; [ "$${PIPESTATUS[0]}" = 0 ] || status=1; \
	$(MAKE) --no-print-directory test-example 2>&1 | tee build/test-example.log; [ "$${PIPESTATUS[0]}" = 0 ] || status=1; \
	$(MAKE) --no-print-directory test-interop 2>&1 | tee build/test-interop.log; [ "$${PIPESTATUS[0]}" = 0 ] || status=1; \
	$(PY) tests/summary.py main=build/test-main.log example=build/test-example.log interop=build/test-interop.log || status=1; \
	exit $$status

test-main: venv apt-deps
	$(PY) -m ruff check refsim kernels_py isa_models compiler tests benchmarks examples
	$(PY) -m pytest -n $(PYTEST_WORKERS) -q

# The example user project (examples/kernel_tests): its kernel under QEMU through refsim's pytest plugin.
test-example: venv apt-deps
	cd examples/kernel_tests && $(abspath $(PY)) -m pytest -q -p no:cacheprovider test_my_kernels.py \
	  --refsim-kernels-dir mykernels --refsim-cpu cortex-m4

test-interop: venv-interop apt-deps
	$(IPY) -m pytest -n $(PYTEST_WORKERS) -q $(INTEROP_TESTS)

pte-fixtures: venv-interop
	$(IPY) tests/fixtures/pte/make_fixtures.py
	$(IPY) tests/fixtures/pte/make_conv_fixtures.py
	$(IPY) examples/models/make_models.py

# hyperfine times whole `refsim run` processes (benchmarks/runtime.py falls back to subprocess timing).
bench: venv
	@command -v hyperfine >/dev/null || $(MAKE) apt-deps APT_PACKAGES=hyperfine
	$(PY) benchmarks/kernels.py
	$(PY) benchmarks/runtime.py

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) $(INTEROP_VENV) .pytest_cache .hypothesis build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Long conformance campaign: every kernel kernels_c has, on all five cores, CONFORMANCE_CASES
# generated cases per kernel (one or a few QEMU starts per core), with instruction counts.
CONFORMANCE_CASES ?= 2000
CONFORMANCE_SEED  ?= 1
CONFORMANCE_OUT   ?= build/conformance
CONFORMANCE_CORES := scalar:cortex-m3 dsp:cortex-m4 dsp:cortex-m7 dsp:cortex-m33 mve:cortex-m55

conformance-long: venv apt-deps
	@mkdir -p $(CONFORMANCE_OUT); status=0; \
	for target in $(CONFORMANCE_CORES); do \
	  isa=$${target%%:*}; cpu=$${target#*:}; \
	  echo "== refsim conformance --isa $$isa --cpu $$cpu --cases $(CONFORMANCE_CASES) --seed $(CONFORMANCE_SEED)"; \
	  $(VENV)/bin/refsim conformance --isa $$isa --cpu $$cpu --cases $(CONFORMANCE_CASES) \
	    --seed $(CONFORMANCE_SEED) --count-instructions $(CONFORMANCE_OUT)/$$cpu.json \
	    --failures-dir $(CONFORMANCE_OUT)/failures-$$cpu || status=1; \
	done; exit $$status
