# piql: set up, run the example, run the tests.
#
#   make demo   lint the bundled example app (examples/social), then deploy it on an
#               embedded store with generated data and run every query
#   make test   run the default test suite
#   make parser rebuild grammar/schema.parser after editing grammar/schema.lark
#
# Both create .venv on first use and refresh it whenever pyproject.toml changes.

PYTHON := $(shell command -v python3.11 2>/dev/null || echo python3)
VENV := .venv
STAMP := $(VENV)/.installed
EXAMPLE := examples/social

.PHONY: venv demo test parser

venv: $(STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Re-install when pyproject.toml is newer than the stamp (new dependencies,
# entry points, packages); the editable install picks up code changes by itself.
$(STAMP): pyproject.toml | $(VENV)/bin/python
	PYTHONWARNINGS=ignore $(VENV)/bin/pip install -q -e '.[dev,spark,postgres]'
	@touch $(STAMP)

# lint exits 1 when some query is unbounded: expected for the example, which
# shows what piql reports for such queries. Exit 2 (input error) fails the demo.
demo: venv
	@echo "== piql lint $(EXAMPLE)/schema.sql $(EXAMPLE)/queries.sql"
	@$(VENV)/bin/piql lint $(EXAMPLE)/schema.sql $(EXAMPLE)/queries.sql; \
	status=$$?; \
	if [ $$status -gt 1 ]; then exit $$status; fi
	@echo
	@echo "== python $(EXAMPLE)/demo.py"
	@$(VENV)/bin/python $(EXAMPLE)/demo.py

# On every core (pytest-xdist): each worker process has its own PostgreSQL server; tests
# sharing a module- or session-wide fixture stay on one worker (tests/conftest.py).
test: venv
	$(VENV)/bin/python -m pytest -q -n auto --dist worksteal

parser: venv
	$(VENV)/bin/python -c 'from piql.language.schema_parser import write_shipped; print("wrote", write_shipped())'
