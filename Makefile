# The two set-up commands of the README: each builds .venv on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test demo bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

# the demo also draws a runtime chart: matplotlib comes with the `plot` extra
$(VENV)/.installed-plot: $(STAMP)
	$(PY) -m pip install -q -e '.[test,plot]'
	touch $@

demo: $(VENV)/.installed-plot
	$(PY) examples/demo.py

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
