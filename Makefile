# The two set-up commands of the README (`make demo`, `make test`): each builds .venv on
# first use and prints only what the user needs (pip and setuptools run quietly).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PIP    := -m pip install -q --disable-pip-version-check --no-warn-script-location
QUIET  := PIP_NO_INPUT=1 PYTHONWARNINGS=ignore::DeprecationWarning

.PHONY: test lint test-versions demo images docs bench gpu-check clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing graphmode and its test dependencies into $(VENV) ..."
	@$(QUIET) $(PY) $(PIP) --upgrade pip > $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@$(QUIET) $(PY) $(PIP) -e '.[test]' >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@# byte-compile the packages as pip does for a regular install (an editable one does not):
	@# where PYTHONDONTWRITEBYTECODE is set, every process would otherwise compile the
	@# compiler's own modules from source at its first static.compile (~45 ms)
	@$(PY) -m compileall -q gmbase gmnative gmops eager static codegen graphmode >> $(VENV)/install.log 2>&1 || true
	@touch $(STAMP)

# The linter and the type checker; both read their settings from pyproject.toml (mypy
# keeps its cache under build/, which is not tracked).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy

# The suite on TEST_WORKERS processes (pytest-xdist): CI's two cores each run half of it
# (7.7 -> about 4.5 minutes there); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
test: lint
	$(PY) -m pytest -n $(TEST_WORKERS)

# The suite on every Python from 3.10 to 3.13 found on this machine (on PATH or under
# pyenv), each in its own virtualenv under build/; a missing interpreter is reported and
# skipped. Not part of CI: it downloads NumPy and friends once per interpreter.
VERSIONS ?= 3.10 3.11 3.12 3.13
test-versions:
	@ran=""; missing=""; \
	for v in $(VERSIONS); do \
	  py=""; \
	  for c in $$(command -v python$$v 2>/dev/null) $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v; do \
	    if [ -x "$$c" ] && "$$c" -c "" 2>/dev/null; then py=$$c; break; fi; \
	  done; \
	  if [ -z "$$py" ]; then echo "== Python $$v: not found, skipped"; missing="$$missing $$v"; continue; fi; \
	  echo "== Python $$v ($$py)"; \
	  env=build/venv-$$v; \
	  test -x $$env/bin/python || $$py -m venv $$env || exit 1; \
	  $(QUIET) $$env/bin/python $(PIP) -e '.[test]' > $$env/install.log 2>&1 || { cat $$env/install.log; exit 1; }; \
	  $$env/bin/python -m pytest -p no:cacheprovider || exit 1; \
	  ran="$$ran $$v"; \
	done; \
	echo "test-versions: passed on:$$ran$${missing:+; not found:$$missing}"

# the demo also draws a runtime chart: matplotlib comes with the `plot` extra
$(VENV)/.installed-plot: $(STAMP)
	@$(QUIET) $(PY) $(PIP) -e '.[test,plot]' >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@touch $@

demo: $(VENV)/.installed-plot
	$(PY) examples/demo.py
	@case ":$$PATH:" in *":$(CURDIR)/$(VENV)/bin:"*) ;; *) \
	  echo "the graphmode command is in $(VENV)/bin: run 'source $(VENV)/bin/activate' to put it on your PATH" \
	  "(or run $(VENV)/bin/graphmode, or python -m graphmode)";; esac

# The documentation site (docs/, mkdocs.yml) into build/site, strict: a warning (a broken
# link, a docstring reference that does not resolve) fails the build, as in CI.
$(VENV)/.installed-docs: $(STAMP)
	@$(QUIET) $(PY) $(PIP) -e '.[test,docs]' >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@touch $@

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet
	@echo "docs: build/site/index.html"

# The pictures the README shows, regenerated into docs/images/ (the only target that
# writes tracked files; every README command writes into build/).
images: $(VENV)/.installed-plot
	$(PY) examples/demo.py --images docs/images

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# On a machine with a CUDA GPU and CuPy (the cuda12 or cuda13 extra): the GPU tests, which
# CI skips, and the GPU benchmark (eager CuPy, compiled for CuPy and PyTorch on CUDA).
gpu-check: $(STAMP)
	@$(PY) -c "import eager, sys; sys.exit(0 if eager.cuda.is_available() else 'gpu-check: no CUDA device with CuPy (pip install -e .[test,cuda12] or .[test,cuda13])')"
	$(PY) -m pytest -m gpu
	$(PY) benchmarks/gpu_bench.py --runs 3

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
