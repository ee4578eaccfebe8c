# Two commands matter: `make lab` opens the book, `make test` proves it works.
# Both create the virtual environment in .venv on first use (and again only when pyproject.toml changes):
# `make lab` installs the package with its [lab], [mpi] and [kernels] extras (JupyterLab, MPICH, ptxas and
# nvdisasm for the static report lab 02 asks about), `make test` with [dev]
# (every extra and the test tools). A hosted runtime (Colab, Kaggle, a JupyterHub) needs neither: there the
# notebooks' setup cell runs `pip install scaledl`, which pulls only what the chapters import.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LAB_STAMP := $(VENV)/.installed-lab
# `make book` and `make release` install only their own extras ([book]: Jupyter Book; [release]: nbformat),
# not [dev]'s CUDA wheels, browser driver and test tools; tests/unit/test_make_installs.py checks the lines.
BOOK_STAMP := $(VENV)/.installed-book
RELEASE_STAMP := $(VENV)/.installed-release
PORT   ?= 8888
# Jupyter refuses to run as root unless told; containers and Colab-like machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: help lab lab-config lab-authors lab-reset test test-fast test-compat test-unit test-notebooks check book doctor bench validate release clean-venv
.PHONY: test-cluster
.PHONY: test-scale

# Every target is listed here (tests/unit/test_make_help.py checks it against the rules below).
help:
	@echo "make help           this list"
	@echo "make lab            open JupyterLab on your copy of the book in workspace/ (prints the URL)"
	@echo "make lab-reset NB=  take the repository's version of one notebook into workspace/ (yours moved aside)"
	@echo "make lab-authors    open JupyterLab on the repository itself (to change the book's notebooks)"
	@echo "make lab-config     only write the .venv's JupyterLab settings that make lab uses (no server)"
	@echo "make check          the static checks of book.toml and every notebook (scaledl book check)"
	@echo "make test           every test: unit, simulator, GPU (skipped without one) and notebook validation"
	@echo "make test-fast      the inner loop: tests/unit and tests/sim only (no notebooks, grading or browser)"
	@echo "make test-compat    the lowest supported dependencies, Colab's GPU image and the newest releases (tests/compat/run.py)"
	@echo "make test-cluster   MPI across an emulated cluster of network namespaces (root; CI runs it)"
	@echo "make test-scale     grading at class scale: Gradescope's setup.sh and run_autograder, 300 notebooks"
	@echo "make test-unit      tests/ only (no notebooks)"
	@echo "make test-notebooks nbval over every chapter and lab solution that is not 'planned'"
	@echo "make book           the static book (Jupyter Book, offline) in _build/html"
	@echo "make doctor         what backend the book will use, and why"
	@echo "make bench          GPU: check every kernel against NumPy, then time it against cuBLAS and copy bandwidth"
	@echo "make validate       doctor, tests/gpu, bench and every GPU notebook: one report in validate-report/"
	@echo "make release OUT=.. the students' copy of the book (no solutions) in OUT; ZIP=1 also OUT.zip"
	@echo "make clean-venv     delete .venv (the next make target creates it again)"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

$(LAB_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[lab,mpi,kernels]'
	@touch $(LAB_STAMP)

$(BOOK_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[book]'
	@touch $(BOOK_STAMP)

$(RELEASE_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[release]'
	@touch $(RELEASE_STAMP)

# `make lab` does not `jupyter trust` the book's notebooks, on purpose. Trusted, JupyterLab draws each
# explorer's stored controls, disconnected: sliders that move and change nothing until the cell is run.
# Untrusted (as on Colab, a JupyterHub or a fresh clone anywhere), it shows the explorer's plain-text
# fallback, a sentence asking the reader to run the cell, above the stored default figure (tests/browser
# checks this). Trust is also a per-machine security decision about HTML/JavaScript outputs, which this
# book does not need, and a fork or a course copy could change what is trusted.
# nbgrader (the [course] extra, so also `make test`'s [dev]) adds its menus (Formgrader,
# Assignment List, Courses), the Create Assignment toolbar and their server extensions to every JupyterLab
# started from this .venv. A reader needs none of them, so `make lab` switches them off for its own server
# only: the lab extension by a page config (JupyterLab reads disabledExtensions from files only, hence
# JUPYTER_CONFIG_PATH), the server extensions on the command line. `.venv/bin/jupyter lab` started by hand
# keeps them, as docs/instructor-guide.md tells instructors; tests/unit/test_make_lab.py checks the flags.
# The reader's JupyterLab opens a copy of the book, workspace/ (git-ignored; scaledl.book.workspace): running
# and saving a chapter there never changes the repository, so `git pull` keeps working. Each `make lab` brings
# new chapters in and updates the ones whose cells the reader has not changed (running and saving one changes only
# its outputs, which do not count); an edited one is kept, and
# `make lab-reset NB=chapters/04_writing_gemm_kernels.ipynb` takes the repository's version (yours moved aside).
# What was kept is printed below JupyterLab's start-up lines, where it stays in sight (scaledl.book.lab_notices).
# `make lab-authors` opens the checkout itself, for those who mean to change the book's notebooks.
WORKSPACE ?= workspace
LAB_SERVER = JUPYTER_CONFIG_PATH=$(CURDIR)/$(VENV)/etc/scaledl-reader$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH} \
	$(VENV)/bin/jupyter lab --no-browser $(ALLOW_ROOT) --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
		--LabApp.default_url=/lab/tree/chapters/00_getting_started.ipynb \
		--ServerApp.jpserver_extensions="{'nbgrader.server_extensions.formgrader': False, \
		'nbgrader.server_extensions.validate_assignment': False, 'nbgrader.server_extensions.assignment_list': False, \
		'nbgrader.server_extensions.course_list': False}"

# No news pop-up and no update check (JupyterLab's defaults fetch both): overrides.json in this .venv's
# JupyterLab settings sets the defaults of every JupyterLab started from it, leaving the reader's own settings.
lab-config: $(LAB_STAMP)
	@mkdir -p $(VENV)/etc/scaledl-reader/labconfig $(VENV)/share/jupyter/lab/settings
	@echo '{"disabledExtensions": {"@jupyter/nbgrader": true}}' > $(VENV)/etc/scaledl-reader/labconfig/page_config.json
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' \
		> $(VENV)/share/jupyter/lab/settings/overrides.json

lab: lab-config
	@$(PY) -m scaledl book workspace --dir $(WORKSPACE) --notices-after-start
	@echo "Starting JupyterLab on your copy of the book in $(WORKSPACE)/ (the repository stays as it is)."
	@echo "Open the http://127.0.0.1:$(PORT)/lab?token=... URL printed below; Ctrl-C stops it."
	@$(LAB_SERVER) --ServerApp.root_dir=$(abspath $(WORKSPACE))

lab-authors: lab-config
	@echo "Starting JupyterLab on the repository itself: what you save here is what git sees."
	@echo "Open the http://127.0.0.1:$(PORT)/lab?token=... URL printed below; Ctrl-C stops it."
	@$(LAB_SERVER) --ServerApp.root_dir=$(CURDIR)

lab-reset: $(LAB_STAMP)
	@test -n "$(NB)" || { echo "usage: make lab-reset NB=chapters/04_writing_gemm_kernels.ipynb"; exit 2; }
	@$(PY) -m scaledl book workspace --dir $(WORKSPACE) --reset $(NB)

doctor: $(LAB_STAMP)
	$(PY) -m scaledl doctor

check: $(LAB_STAMP)
	$(PY) -m scaledl book check

# Committed outputs were made on the simulator, so notebooks are validated on it whatever the machine has.
NBVAL_ARGS = --durations=15 --nbval --nbval-sanitize-with tests/notebooks/sanitize.cfg --nbval-cell-timeout 900

# Both cores (pytest-xdist). Each test file and each notebook runs whole in one worker (--dist loadfile), and
# tests/conftest.py's scheduler also keeps together what must not overlap (the grading sandbox, mpiexec,
# the browser) and hands out the longest units first. PYTEST_JOBS=1 runs serially.
PYTEST_JOBS ?= 2
XDIST_ARGS = $(if $(filter-out 0 1,$(PYTEST_JOBS)),-n $(PYTEST_JOBS) --dist loadfile)

# The full gate (CI runs it): ends with the 15 slowest tests (--durations in NBVAL_ARGS) and the wall time.
test: $(STAMP)
	start=$$(date +%s); \
	$(PY) -m scaledl book check && \
	SCALEDL_BACKEND=simulator $(PY) -m pytest tests --ignore=tests/cluster $$($(PY) -m scaledl book list --validated) \
		$(NBVAL_ARGS) \
		$(XDIST_ARGS); \
	status=$$?; echo "make test: wall time $$(( $$(date +%s) - start )) s (exit status $$status)"; exit $$status

# The inner loop: the unit and simulator tiers, no notebooks, no grading batches, no browser (under 3 minutes
# on two cores). `make test` stays the gate.
test-fast: $(STAMP)
	start=$$(date +%s); \
	SCALEDL_BACKEND=simulator $(PY) -m pytest tests/unit tests/sim --durations=10 $(XDIST_ARGS); \
	status=$$?; echo "make test-fast: wall time $$(( $$(date +%s) - start )) s"; exit $$status

# MPI across hosts, on one machine: tests/cluster builds network namespaces joined by veth pairs and a bridge,
# shapes the links with tc (tbf), and runs lab 05's ring, the book's all-reduces and lab 06's training across
# them (about a minute). Needs root; skipped with the reason elsewhere. Not part of `make test` (its 15 minutes);
# CI runs it after.
test-cluster: $(STAMP)
	SCALEDL_BACKEND=simulator $(PY) -m pytest tests/cluster -v --durations=10

# Not part of `make test` (CI runs it after test-compat; about 10 minutes on two idle cores): the Gradescope
# autograder as Gradescope runs it (setup.sh's virtual environment, then run_autograder on ordinary and hostile
# submissions; tests/grading/test_gradescope_container.py) and a class of 300 notebooks of lab07 (the cheapest lab to
# grade) graded with --jobs 2 (tests/grading/test_class_scale.py), and nbgrader 0.9's own release/collect/export
# flow end to end (tests/grading/test_nbgrader_course.py), and the hostile corpus of labs 04-06
# (tests/grading/test_hostile.py; lab03's runs in make test). They skip unless SCALEDL_TEST_SCALE=1.
test-scale: $(STAMP)
	start=$$(date +%s); \
	SCALEDL_TEST_SCALE=1 SCALEDL_BACKEND=simulator $(PY) -m pytest tests/grading/test_gradescope_container.py \
		tests/grading/test_nbgrader_course.py tests/grading/test_class_scale.py \
		"tests/grading/test_hostile.py::test_hostile_corpus[lab04]" \
		"tests/grading/test_hostile.py::test_hostile_corpus[lab05]" \
		"tests/grading/test_hostile.py::test_hostile_corpus[lab06]" -v -s --durations=10; \
	status=$$?; echo "make test-scale: wall time $$(( $$(date +%s) - start )) s (exit status $$status)"; exit $$status

# Not part of `make test` (CI runs it after): two more virtual environments in .venv-compat, one with every
# runtime dependency at its floor (compat/lowest.txt), one with the packages of a dated Colab GPU image
# (compat/colab-gpu-*.txt) plus the book's wheel; see tests/compat/run.py.
test-compat:
	$(PYTHON) tests/compat/run.py all

test-unit: $(STAMP)
	$(PY) -m pytest tests $(XDIST_ARGS)

test-notebooks: $(STAMP)
	SCALEDL_BACKEND=simulator $(PY) -m pytest $$($(PY) -m scaledl book list --validated) $(NBVAL_ARGS)

# Jupyter Book 1.x over a tree staged from book.toml in _build/site-src (student labs only, no answer keys);
# nothing is executed. Offline: MathJax is bundled. Search's page excerpts need http, not file://.
# Installs the [book] extra only (Jupyter Book, Sphinx and their extensions).
book: $(BOOK_STAMP)
	$(PY) -m scaledl book html --out _build/html
	@echo "Static book written to _build/html; view it with: $(PY) -m http.server -d _build/html 8000"

bench: $(STAMP)
	$(PY) -m scaledl bench

# On a GPU: the figures and statuses to record; without one, the same steps on the simulator at tiny sizes.
# QUICK=1: smaller bench, first GPU chapter and lab only; HOSTED=1: also the fresh-venv (Colab-like) dry run.
validate: $(STAMP)
	$(PY) -m scaledl validate --out validate-report $(if $(QUICK),--quick) $(if $(HOSTED),--hosted)

# The student bundle (docs/instructor-guide.md): chapters without answer keys, student labs, the package.
# Installs the [release] extra only (nbformat); grading (`scaledl course grade`) needs [course].
release: $(RELEASE_STAMP)
	@test -n "$(OUT)" || { echo "usage: make release OUT=../course-students [ZIP=1] [FORCE=1]"; exit 2; }
	$(PY) -m scaledl course release "$(OUT)" $(if $(ZIP),--zip) $(if $(FORCE),--force)

clean-venv:
	rm -rf $(VENV)
