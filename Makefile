# perceptron_lab — common tasks. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Tests and CI read datasets from here when it exists (see README, "Data").
PLAB_DATA ?= $(abspath ../shared/data)
export PLAB_DATA

.DEFAULT_GOAL := help
.PHONY: help install demo test test-full reproduce bench check-configs clean golden docs docs-screenshots

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(BIN)/plab: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(BIN)/plab ## Create .venv and install perceptron_lab with its test extras

demo: install ## Run the packaged quickstart (sonar, 10-fold CV; no download needed)
	$(BIN)/plab run

test: install ## Fast test suite (what CI runs)
	$(BIN)/python -m pytest -q

test-full: install ## All tests, including the slow full-data reproductions (marker `slow`)
	$(BIN)/python -m pytest -q -m "slow or not slow"

check-configs: install ## Validate every config under configs/
	$(BIN)/plab config check configs/*.yaml configs/*/*.yaml

reproduce: install ## Regenerate the paper tables under results/ and the report (SET=full adds Khardon-Wachman Table 7 on MNIST; SET=budget runs the budget study and DOGMA's demo)
	$(BIN)/python -m perceptron_lab.cli.reproduce --set $(or $(SET),core) --jobs $(or $(JOBS),1)

bench: install ## Speed benchmarks against scikit-learn and River, written to results/bench/
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m benchmarks

clean: ## Remove caches and run outputs (keeps results/)
	rm -rf runs .pytest_cache build site *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	rm -rf "$${XDG_CACHE_HOME:-$$HOME/.cache}/perceptron_lab/numba"   # the compiled engine (engine/numba_cache.py)

docs: install ## Regenerate the generated pages and README blocks from results/, then build the site into site/
	$(BIN)/pip install -q -e '.[docs]'
	$(BIN)/python -m perceptron_lab.cli.docs_pages
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

docs-screenshots: install ## Screenshots of the built site in headless Chromium, into results/docs/
	$(BIN)/pip install -q -e '.[docs]'
	PLAB_DOCS_SCREENSHOTS=results/docs $(BIN)/python -m pytest -q tests/integration/test_docs_browser.py

golden: install ## Recompute the golden values CI guards (results/golden/); only for intended changes
	$(BIN)/python -m perceptron_lab.report.golden
