# make install  - create .venv (Python 3.11) with the pinned environment; fast no-op when up to date
# make demo     - the main job on the bundled default data (see README)
# make lint     - install if needed, then run the linter (ruff, configured in ruff.toml)
# make test     - install if needed, lint, then run the test suite (on TEST_WORKERS cores)
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DATA_DIR ?= data
# pytest-xdist workers for `make test`. --dist loadscope: each test module runs whole on one
# worker, so a module-scoped fixture (a reference training run) is made once; modules are handed
# out in collection order, the longest first (tests/ordering.py: from tests/durations.json).
TEST_WORKERS ?= 2
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: install lint test demo data constraints clean-venv

install: $(STAMP)

$(STAMP): constraints.txt requirements.txt setup.py allennlp_elmo_c_spacy.py $(wildcard allennlp_elmo_c/*/*.c)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -c constraints.txt -r requirements.txt
	$(PIP) install --no-deps -c constraints.txt allennlp==2.10.1 allennlp-models==2.10.1
	@# Flair (integrations/flair.py), pinned in constraints.txt, without its metadata's requirements.
	$(PIP) install --no-deps -c constraints.txt flair deprecated segtok lxml bioc gdown beautifulsoup4 \
		soupsieve transformer-smaller-training-vocab
	$(PIP) install --no-deps --no-build-isolation -e .
	@# An earlier install's start-up hook, no longer part of the package.
	rm -f "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/allennlp_elmo_c_startup.pth"
	@touch $(STAMP)

lint: install
	$(VENV)/bin/ruff check allennlp_elmo_c allennlp_elmo_c_spacy.py tests experiments

test: lint
	$(PY) -m pytest tests -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

data: install
	$(PY) -m experiments.corpora build-demo-data --data-dir $(DATA_DIR)

demo: install
	$(PY) -m experiments.demo --data-dir $(DATA_DIR)

# Rewrite constraints.txt from the current venv (keeps the header comments).
constraints: install
	@{ grep '^#' constraints.txt; $(PIP) freeze --all --exclude-editable | grep -v -E '^(pip|allennlp-elmo-c)=='; } > constraints.txt.new
	@mv constraints.txt.new constraints.txt

clean-venv:
	rm -rf $(VENV)
