# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
PIP = $(PYTHON) -m pip install --progress-bar off -q

.PHONY: demo install install-test test lint screenshots bench

install:
	$(PIP) -e .
	@# pyenv only puts a new console script on PATH after a rehash
	@command -v pyenv >/dev/null 2>&1 && pyenv rehash 2>/dev/null || true
	PYTHON=$(PYTHON) bash scripts/install-llama-server.sh

demo: install
	$(PYTHON) -m app demo

install-test:
	$(PIP) -e '.[test]'
	PYTHON=$(PYTHON) bash scripts/install-llama-server.sh

lint:
	$(PYTHON) -m ruff check app tests bench scripts
	$(PYTHON) -m mypy app scripts tests
	@# lint-imports, through $(PYTHON): its console script may not be on PATH before a pyenv rehash
	$(PYTHON) -c 'from importlinter.cli import lint_imports_command; lint_imports_command()'

test: install-test lint
	$(PYTHON) -m pytest -q -p no:cacheprovider

screenshots: install
	$(PYTHON) -m scripts.screenshots screenshots

BENCHES = event_latency_cli ssh_connect lifecycle ui_event_to_screen ui_idle_cpu ui_size hostile_rss liveness link_loss

bench: install-test
	for b in $(BENCHES); do $(PYTHON) -m bench.$$b || exit 1; done
