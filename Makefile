# refsim: every target creates or reuses .venv and installs what it needs.
# `make demo` runs the main job on a bundled model; `make test` passes the tests.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Debian packages for kernels_c (QEMU runs of the C kernels); installed only when missing.
APT_PACKAGES := gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_WORKERS ?= 2

.PHONY: demo test lint bench conformance-vectors apt-deps venv clean

venv: $(VENV)/.installed

# torch is not needed by the runtime or the tests of the golden numerics; the `compile`
# extra (torch==2.13.0, a local CPU wheel on our machines) is installed by targets that need it.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
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

demo: venv apt-deps
	$(PY) examples/kws_layers.py

test: venv apt-deps
	$(PY) -m ruff check refsim kernels_py isa_models compiler tests benchmarks examples
	$(PY) -m pytest -n $(PYTEST_WORKERS) -q

bench: venv
	$(PY) benchmarks/kernels.py

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
