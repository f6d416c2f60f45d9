# Burnbox: `make run` starts the service on the embedded default, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PG_TEST_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test
REDIS_TEST_URL ?= redis://127.0.0.1:6379/15
PYTEST_ARGS ?=
# The suite runs in parallel, one pytest-xdist worker per core (at least 2): each worker has its
# own database (PostgreSQL: the test database's name + _gwN) and Redis database number, and a
# test file stays on one worker. PYTEST_WORKERS=0 runs it in this one process.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -lt 2 ] && n=2; echo $$n)
PYTEST_PARALLEL = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

.PHONY: install install-test lock run test test-postgres test-faults lint bench bench-maildev \
	caniemail-data clean

# Two locks, both written by `make lock` from pyproject.toml: requirements.lock is what runs (the
# image installs it too), requirements-test.lock that plus the test tools, at the same versions.
$(BIN)/.installed: requirements.lock pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	# The Python client and its pytest plugin (clients/python), so the suite tests them.
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e clients/python
	touch $@

$(BIN)/.installed-test: $(BIN)/.installed requirements-test.lock
	$(BIN)/python -m pip install --quiet -r requirements-test.lock
	touch $@

# axe-core, which the browser tests inject into every page (tests/ui/test_accessibility.py).
tests/ui/node_modules/.installed: tests/ui/package.json tests/ui/package-lock.json
	npm ci --prefix tests/ui --no-audit --no-fund
	touch $@

install: $(BIN)/.installed  ## .venv with what runs (requirements.lock)

install-test: $(BIN)/.installed-test tests/ui/node_modules/.installed  ## and the test tools (requirements-test.lock), axe-core for the browser tests

# Keeps every pin that still satisfies pyproject.toml; `make lock LOCK_ARGS=--upgrade` moves them.
LOCK_ARGS ?=
PIP_COMPILE = $(BIN)/pip-compile --quiet --strip-extras --no-emit-index-url --no-emit-find-links $(LOCK_ARGS)
lock: install-test  ## rewrite requirements.lock and requirements-test.lock from pyproject.toml
	$(PIP_COMPILE) --output-file requirements.lock pyproject.toml
	$(PIP_COMPILE) --extra test --constraint requirements.lock --output-file requirements-test.lock pyproject.toml

run: install  ## run everything in one process: SQLite, http://127.0.0.1:8080, smtp 127.0.0.1:2525
	$(BIN)/burnbox serve

test: install-test  ## the test suite on the embedded backend (SQLite + in-process broker)
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

test-postgres: install-test  ## the test suite on PostgreSQL + Redis
	BURNBOX_TEST_DATABASE_URL=$(PG_TEST_URL) BURNBOX_TEST_REDIS_URL=$(REDIS_TEST_URL) \
		$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) -m "not faults" $(PYTEST_ARGS)
	# The fault tests stop servers and kill processes under load: alone, not beside a worker
	# (exit status 5: PYTEST_ARGS chose none of them).
	BURNBOX_TEST_DATABASE_URL=$(PG_TEST_URL) BURNBOX_TEST_REDIS_URL=$(REDIS_TEST_URL) \
		$(BIN)/python -m pytest -q -m faults $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-faults: install-test  ## only the fault tests (part of test-postgres): outages and kills under load
	BURNBOX_TEST_DATABASE_URL=$(PG_TEST_URL) BURNBOX_TEST_REDIS_URL=$(REDIS_TEST_URL) \
		$(BIN)/python -m pytest -q -m faults $(PYTEST_ARGS)

lint: install-test
	$(BIN)/ruff check .

bench: install-test  ## benchmarks; figures are ratios against a baseline measured in the same run
	$(BIN)/python -m bench

bench-maildev:  ## maildev 3.0.0 into bench/node_modules: bench/ingest.py then measures it too
	npm install --prefix bench --no-audit --no-fund maildev@3.0.0 --before=2026-09-25T00:00:00Z

# The caniemail.com support data behind the HTML check (models/mail/checks/html_check.py), from the
# `caniemail` npm package (MIT), with its licence. Commit both files after a review of the diff.
CANIEMAIL_VERSION ?= latest
caniemail-data:  ## refresh models/mail/checks/data/caniemail.json (+ LICENSE) from npm: CANIEMAIL_VERSION=x.y.z
	rm -rf build/caniemail && mkdir -p build/caniemail
	npm pack --silent --pack-destination build/caniemail caniemail@$(CANIEMAIL_VERSION)
	tar -xzf build/caniemail/caniemail-*.tgz -C build/caniemail
	cp build/caniemail/package/data/caniemail.json models/mail/checks/data/caniemail.json
	cp build/caniemail/package/LICENSE models/mail/checks/data/caniemail.LICENSE
	rm -rf build/caniemail

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
