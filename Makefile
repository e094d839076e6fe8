# Goldset. `make run` starts the demo; `make test` runs the whole suite.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install lint worker demo clean-demo lint-js test-js docs

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Goldset needs $(PYTHON) on PATH (Python 3.11)."; exit 1; }
	$(PYTHON) -m venv $(VENV)

# torch first, pinned: any other torch version pulls a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev,encoder]"
	touch $(STAMP)

install: $(STAMP)

# Migrates, then starts a Celery worker on an embedded file-system broker and the development
# server, and prints the logins; the demo loads as a job on the worker meanwhile, once
# (demo/management/commands/quickstart.py).
run: export DEBUG ?= 1
run: $(STAMP)
	@$(BIN)/python manage.py quickstart

# pytest in PYTEST_WORKERS processes (pytest-xdist; whole files to a process, so a module's
# fixtures are built once), then the tests marked `serial` (they stop a service every process
# shares) in one process; pytest's 5 means that run selected none.
PYTEST_WORKERS ?= 2
test: $(STAMP) test-js
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not serial" $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m serial $(PYTEST_ARGS) || [ $$? -eq 5 ]

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The browser JavaScript (static/goldset): ESLint from package-lock.json, reinstalled when the
# lock file is newer than what npm last installed; unit tests need only Node (20.9 or later).
NODE_STAMP := node_modules/.package-lock.json

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

lint-js: $(NODE_STAMP)
	npx --no-install eslint static/goldset tests/js

test-js:
	node --test tests/js/*.test.js

worker: $(STAMP)
	$(BIN)/celery -A goldset worker --loglevel=INFO --concurrency=2

# The manual as a site, in site/. --strict: a broken link or a page missing from the nav fails.
# NO_MKDOCS_2_WARNING quiets Material's banner about MkDocs 2, which this site does not use.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
