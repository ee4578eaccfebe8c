# Two commands matter: `make lab` opens the book, `make test` proves it works.
# Both create the virtual environment in .venv on first use (and again only when pyproject.toml changes):
# `make lab` installs the package with its [lab] and [mpi] extras (JupyterLab, MPICH), `make test` with [dev]
# (every extra and the test tools). A hosted runtime (Colab, Kaggle, a JupyterHub) needs neither: there the
# notebooks' setup cell runs `pip install scaledl`, which pulls only what the chapters import.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LAB_STAMP := $(VENV)/.installed-lab
PORT   ?= 8888
# Jupyter refuses to run as root unless told; containers and Colab-like machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: help lab test test-unit test-notebooks check book doctor bench validate release clean-venv

help:
	@echo "make lab            open JupyterLab on the book (prints the URL)"
	@echo "make test           every test: unit, simulator, GPU (skipped without one) and notebook validation"
	@echo "make test-unit      tests/ only (no notebooks)"
	@echo "make test-notebooks nbval over every chapter and lab solution that is not 'planned'"
	@echo "make book           the static book (Jupyter Book, offline) in _build/html"
	@echo "make doctor         what backend the book will use, and why"
	@echo "make validate       doctor, tests/gpu, bench and every GPU notebook: one report in validate-report/"
	@echo "make release OUT=.. the students' copy of the book (no solutions) in OUT; ZIP=1 also OUT.zip"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

$(LAB_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[lab,mpi]'
	@touch $(LAB_STAMP)

# `make lab` does not `jupyter trust` the book's notebooks, on purpose. Trusted, JupyterLab draws each
# explorer's stored controls, disconnected: sliders that move and change nothing until the cell is run.
# Untrusted (as on Colab, a JupyterHub or a fresh clone anywhere), it shows the explorer's plain-text
# fallback, a sentence asking the reader to run the cell, above the stored default figure (tests/browser
# checks this). Trust is also a per-machine security decision about HTML/JavaScript outputs, which this
# book does not need, and a fork or a course copy could change what is trusted.
lab: $(LAB_STAMP)
	@echo "Starting JupyterLab on the book. Open the http://127.0.0.1:$(PORT)/lab?token=... URL printed below; Ctrl-C stops it."
	$(VENV)/bin/jupyter lab --no-browser $(ALLOW_ROOT) --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
		--ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/chapters/00_getting_started.ipynb

doctor: $(LAB_STAMP)
	$(PY) -m scaledl doctor

check: $(LAB_STAMP)
	$(PY) -m scaledl book check

# Committed outputs were made on the simulator, so notebooks are validated on it whatever the machine has.
NBVAL_ARGS = --durations=15 --nbval --nbval-sanitize-with tests/notebooks/sanitize.cfg --nbval-cell-timeout 900

test: $(STAMP)
	$(PY) -m scaledl book check
	SCALEDL_BACKEND=simulator $(PY) -m pytest tests $$($(PY) -m scaledl book list --validated) $(NBVAL_ARGS)

test-unit: $(STAMP)
	$(PY) -m pytest tests

test-notebooks: $(STAMP)
	SCALEDL_BACKEND=simulator $(PY) -m pytest $$($(PY) -m scaledl book list --validated) $(NBVAL_ARGS)

# Jupyter Book 1.x over a tree staged from book.toml in _build/site-src (student labs only, no answer keys);
# nothing is executed. Offline: MathJax is bundled. Search's page excerpts need http, not file://.
book: $(STAMP)
	$(PY) -m scaledl book html --out _build/html
	@echo "Static book written to _build/html; view it with: $(PY) -m http.server -d _build/html 8000"

bench: $(STAMP)
	$(PY) -m scaledl bench

# On a GPU: the figures and statuses to record; without one, the same steps on the simulator at tiny sizes.
# QUICK=1: smaller bench, first GPU chapter and lab only; HOSTED=1: also the fresh-venv (Colab-like) dry run.
validate: $(STAMP)
	$(PY) -m scaledl validate --out validate-report $(if $(QUICK),--quick) $(if $(HOSTED),--hosted)

# The student bundle (docs/instructor-guide.md): chapters without answer keys, student labs, the package.
release: $(STAMP)
	@test -n "$(OUT)" || { echo "usage: make release OUT=../course-students [ZIP=1] [FORCE=1]"; exit 2; }
	$(PY) -m scaledl course release "$(OUT)" $(if $(ZIP),--zip) $(if $(FORCE),--force)

clean-venv:
	rm -rf $(VENV)
