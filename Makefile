# tinyunits: every command builds its own environment in .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install tour test test-numpy test-strict gradcheck lessons figures bench site clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# The main job: check every op's and unit's backward, then run the engine lesson.
tour: install
	$(PY) -m tinyunits.gradcheck
	$(PY) lessons/00_engine.py

# The suite twice: on NumPy, then on the strict backend (CuPy's refusals, no GPU needed).
test: test-numpy test-strict

test-numpy: install
	$(PY) -m pytest -q

test-strict: install
	TINYUNITS_BACKEND=strict $(PY) -m pytest -q

gradcheck: install
	$(PY) -m tinyunits.gradcheck

# Every lesson in --quick mode (each under 5 minutes on 2 cores); figures land in figures/.
lessons: install
	for lesson in lessons/*.py; do echo "== $$lesson"; $(PY) $$lesson --quick || exit 1; done

figures: lessons

# Benchmarks against PyTorch when it is installed (pip install torch==2.13.0).
bench: install
	$(PY) tests/benchmarks/run.py

# The course site in site/: lessons executed (SITE_MODE=quick by default, tiny in
# seconds, full), cached in build/site-cache; KaTeX comes from npm, once.
SITE_MODE ?= quick
SITE_STAMP := $(VENV)/.site-stamp

$(SITE_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[dev,site]"
	touch $(SITE_STAMP)

site: $(SITE_STAMP)
	SITE_MODE=$(SITE_MODE) NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build

clean:
	rm -rf $(VENV) figures checkpoints build site *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
