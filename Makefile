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

.PHONY: install run test test-postgres test-faults lint bench bench-maildev caniemail-data clean

$(BIN)/.installed: requirements.lock pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	# The Python client and its pytest plugin (clients/python), so the suite tests them.
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e clients/python
	touch $@

# axe-core, which the browser tests inject into every page (tests/ui/test_accessibility.py).
tests/ui/node_modules/.installed: tests/ui/package.json tests/ui/package-lock.json
	npm ci --prefix tests/ui --no-audit --no-fund
	touch $@

install: $(BIN)/.installed tests/ui/node_modules/.installed  ## .venv with the locked dependencies, and axe-core for the browser tests

run: install  ## run everything in one process: SQLite, http://127.0.0.1:8080, smtp 127.0.0.1:2525
	$(BIN)/burnbox serve

test: install  ## the test suite on the embedded backend (SQLite + in-process broker)
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

test-postgres: install  ## the test suite on PostgreSQL + Redis
	BURNBOX_TEST_DATABASE_URL=$(PG_TEST_URL) BURNBOX_TEST_REDIS_URL=$(REDIS_TEST_URL) \
		$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) -m "not faults" $(PYTEST_ARGS)
	# The fault tests stop servers and kill processes under load: alone, not beside a worker
	# (exit status 5: PYTEST_ARGS chose none of them).
	BURNBOX_TEST_DATABASE_URL=$(PG_TEST_URL) BURNBOX_TEST_REDIS_URL=$(REDIS_TEST_URL) \
		$(BIN)/python -m pytest -q -m faults $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-faults: install  ## only the fault tests (part of test-postgres): outages and kills under load
	BURNBOX_TEST_DATABASE_URL=$(PG_TEST_URL) BURNBOX_TEST_REDIS_URL=$(REDIS_TEST_URL) \
		$(BIN)/python -m pytest -q -m faults $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

bench: install  ## benchmarks; figures are ratios against a baseline measured in the same run
	$(BIN)/python -m bench

bench-maildev:  ## maildev 3.0.0 into bench/node_modules: bench/ingest.py then measures it too
	npm install --prefix bench --no-audit --no-fund maildev@3.0.0 --before=2026-09-25T00:00:00Z

# The caniemail.com support data behind the HTML check (models/mail/html_check.py), from the
# `caniemail` npm package (MIT), with its licence. Commit both files after a review of the diff.
CANIEMAIL_VERSION ?= latest
caniemail-data:  ## refresh models/mail/data/caniemail.json (+ LICENSE) from npm: CANIEMAIL_VERSION=x.y.z
	rm -rf build/caniemail && mkdir -p build/caniemail
	npm pack --silent --pack-destination build/caniemail caniemail@$(CANIEMAIL_VERSION)
	tar -xzf build/caniemail/caniemail-*.tgz -C build/caniemail
	cp build/caniemail/package/data/caniemail.json models/mail/data/caniemail.json
	cp build/caniemail/package/LICENSE models/mail/data/caniemail.LICENSE
	rm -rf build/caniemail

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
