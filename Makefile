# tinyunits: every command builds its own environment in .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install data tour test test-numpy test-strict gradcheck lessons figures notebooks bench grids site clean student grade gradescope

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,cluster,site]"
	touch $(STAMP)

install: $(STAMP)

# The real data the tests and lessons read (Fashion-MNIST), before any of them runs:
# found where datasets.py looks (Debian's dataset-fashion-mnist, $TINYUNITS_DATA, the
# cache), else downloaded and checked; unreachable, one message says how to get it.
data: install
	$(PY) datasets.py ensure fashion-mnist

# The main job: check every op's and unit's backward, then run the engine lesson.
tour: install
	$(PY) -m tinyunits.gradcheck
	$(PY) lessons/00_engine.py

# The suite twice: on NumPy, then on the strict backend (CuPy's refusals, no GPU needed).
test: test-numpy test-strict

test-numpy: data
	$(PY) -m pytest -q

test-strict: data
	TINYUNITS_BACKEND=strict $(PY) -m pytest -q

gradcheck: install
	$(PY) -m tinyunits.gradcheck

# Every lesson in --quick mode (each under 5 minutes on 2 cores); figures land in figures/.
lessons: data
	for lesson in lessons/[0-9]*.py; do echo "== $$lesson"; $(PY) $$lesson --quick || exit 1; done

figures: lessons

# Every lesson's paper-scale grids into lessons/results/sweeps.sqlite (hours to days on 2
# cores), on GRID_WORKERS local processes. Finished trials are kept: stop it any time and
# run it again to go on. GRIDS picks the lessons and their order.
GRIDS ?= dac two_argument tmaf hannet focusing
GRID_WORKERS ?= 2
grids: data
	for lesson in $(GRIDS); do $(PY) -m lessons.trials $$lesson --workers $(GRID_WORKERS) || exit 1; done

# One notebook per lesson in notebooks/ (jupytext, outputs cleared; generated, so git-ignored).
notebooks: install
	$(PY) lessons/_notebooks.py notebooks

# Benchmarks against PyTorch when it is installed (pip install torch==2.13.0).
bench: install
	$(PY) tests/benchmarks/run.py

# The course (docs/teaching.md): a student copy with every exercise stubbed, and its grader.
STUDENT ?= ../student
student: install
	$(PY) -m tinyunits.course student $(STUDENT)

# Grades DIR (default: this checkout): `make grade DIR=../student`.
grade: install
	$(PY) -m tinyunits.course grade $(DIR)

# A Gradescope autograder zip (setup.sh, run_autograder, the grader, a clean student copy,
# course_hidden/): `make gradescope ONLY="dac"` grades only those exercises.
GRADESCOPE ?= build/gradescope.zip
gradescope: install
	$(PY) -m tinyunits.course gradescope --out $(GRADESCOPE) $(if $(ONLY),--only $(ONLY))

# The course site in site/: lessons executed (SITE_MODE=quick by default, tiny in
# seconds, full), cached in build/site-cache; KaTeX comes from npm, once. It shows no
# solution and no teacher's page; a teacher's site with both: `make site
# SITE_SOLUTIONS=1`, into site-solutions/ (docs/teaching.md). Published under a
# folder: `make site SITE_URL=https://host/course/` (the 404 page's links need it).
SITE_MODE ?= quick
SITE_SOLUTIONS ?= 0
SITE_DIR := $(if $(filter-out 0,$(SITE_SOLUTIONS)),site-solutions,site)
site: data
	SITE_MODE=$(SITE_MODE) SITE_SOLUTIONS=$(SITE_SOLUTIONS) NO_MKDOCS_2_WARNING=1 \
		$(PY) -m mkdocs build --site-dir $(SITE_DIR)

clean:
	rm -rf $(VENV) figures notebooks checkpoints build site site-solutions *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
