# angr-ram: `make demo` runs the headline example, `make test` the test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow samples bench lint clean install-check

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

samples:
	$(MAKE) -C samples

demo: $(STAMP) samples
	$(VENV)/bin/angr-ram run samples/build/matrix40_O0 --stdin-bytes 2 --model fork

test: $(STAMP) samples
	$(VENV)/bin/ruff check angr_ram bench tests
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=15 -m "not slow" tests

# the tests marked slow: ratio claims that `make bench` also prints, the longest corpus programs, and
# every test or case that took 15 s or more (tests/conftest.py SLOW_CASES); not in CI (about 90 minutes)
test-slow: $(STAMP) samples
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=10 -m slow tests

bench: $(STAMP) samples
	$(PY) -m pip install -q -e '.[test,bench,dist]'
	$(VENV)/bin/angr-ram bench --repeat 3
	mkdir -p bench-results
	$(VENV)/bin/angr-ram bench --models --plot bench-results/models_vs_matrix_size.png
	$(VENV)/bin/angr-ram bench --cache --repeat 3
	$(VENV)/bin/angr-ram bench --merging
	$(VENV)/bin/angr-ram bench --merging --loops --timeout 120
	$(VENV)/bin/angr-ram bench --solver
	$(VENV)/bin/angr-ram bench --corpus --timeout 300
	$(VENV)/bin/angr-ram bench --tests
	$(VENV)/bin/angr-ram bench --distributed
	$(VENV)/bin/angr-ram bench --limits
	$(VENV)/bin/angr-ram bench --history
	$(VENV)/bin/angr-ram bench --drives

# the package as a user installs it: `pip install .` (non-editable) into a fresh venv, then the
# command from outside the checkout (the benchmarks are not installed: `bench` says so in one line,
# and runs from the checkout's directory)
install-check: samples
	rm -rf /tmp/angr-ram-install-check && $(PYTHON) -m venv /tmp/angr-ram-install-check
	/tmp/angr-ram-install-check/bin/pip install -q .
	cd /tmp && /tmp/angr-ram-install-check/bin/angr-ram run $(CURDIR)/samples/build/matrix3_O0 --stdin-bytes 2
	cd /tmp && ! /tmp/angr-ram-install-check/bin/angr-ram bench uaf 2> /tmp/angr-ram-install-check/bench.err
	grep -q "runs from a checkout" /tmp/angr-ram-install-check/bench.err
	/tmp/angr-ram-install-check/bin/angr-ram bench uaf --samples-dir $(CURDIR)/samples/build --timeout 120
	rm -rf /tmp/angr-ram-install-check build

lint: $(STAMP)
	$(VENV)/bin/ruff check angr_ram bench tests

clean:
	$(MAKE) -C samples clean
	rm -rf $(VENV) *.egg-info
