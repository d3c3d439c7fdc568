# The README's two commands: `make demo` (set up + build the default index + answer) and
# `make test` (set up + run the tests). Both are idempotent: set-up reruns only when
# pyproject.toml changes, and the index build is skipped when it is already up to date.
# Each installs what it runs: the demo the "app" extra, the tests every extra with dev and bench.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
APP_STAMP := $(VENV)/.medcite-app
STAMP     := $(VENV)/.medcite-all
QUESTION ?= Which score is used to decide on anticoagulation in atrial fibrillation?

.PHONY: setup setup-app demo test test-all lint format audit bench serve clean-data ragas

setup: $(STAMP)
setup-app: $(APP_STAMP)

$(APP_STAMP): pyproject.toml scripts/setup.sh
	PYTHON=$(PYTHON) VENV=$(VENV) EXTRAS=app bash scripts/setup.sh
	touch $@

# everything: the app, its tests, the benchmarks and the browser (so the app's stamp too)
$(STAMP): pyproject.toml scripts/setup.sh
	PYTHON=$(PYTHON) VENV=$(VENV) EXTRAS=all,dev,bench bash scripts/setup.sh
	touch $@ $(APP_STAMP)

# Each step's wall time is printed at the end (the set-up step is ~0 s once .venv is current).
TIMES := data/demo-times.txt

demo:
	@mkdir -p data && : > $(TIMES)
	@bash scripts/timed.sh $(TIMES) "set-up (.venv)" $(MAKE) --no-print-directory setup-app
	@bash scripts/timed.sh $(TIMES) "generator model" $(BIN)/medcite models fetch
	@bash scripts/timed.sh $(TIMES) "default index" $(BIN)/medcite index build --skip-existing
	@bash scripts/timed.sh $(TIMES) "answer" $(BIN)/medcite ask "$(QUESTION)"
	@echo "-- time per step"; cat $(TIMES)

test: setup
	$(BIN)/medcite models fetch
	$(BIN)/python -m pytest -m "not slow"

test-all: setup
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/medcite bench run-all

serve: setup-app
	$(BIN)/medcite serve

# ruff format owns the layout (no hand-packed lines, no `# fmt: skip`); `make format` applies it.
lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check medcite core rag corpora indexes evals api tests scripts bench training
	$(BIN)/mypy medcite core rag corpora indexes evals api training bench scripts

format: setup
	$(BIN)/ruff format .

# Known vulnerabilities in the installed packages (PyPI's advisory records); triage in
# scripts/audit-ignore.toml, explained in docs/reliability.md.
audit: setup
	$(BIN)/python scripts/audit_deps.py --out data/audit/dependencies.json

# ragas itself, in its own environment (.venv-ragas; it cannot share .venv): pins in
# evals/ragas_env/requirements.txt, reinstalled only when they change. docs/evaluation.md, "ragas itself".
RAGAS_VENV  ?= .venv-ragas
RAGAS_STAMP := $(RAGAS_VENV)/.ragas-installed

ragas: $(RAGAS_STAMP)

$(RAGAS_STAMP): evals/ragas_env/requirements.txt
	[ -x $(RAGAS_VENV)/bin/python ] || $(PYTHON) -m venv $(RAGAS_VENV)
	$(RAGAS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RAGAS_VENV)/bin/python -m pip install --quiet -r evals/ragas_env/requirements.txt
	$(RAGAS_VENV)/bin/python -m pip check
	$(RAGAS_VENV)/bin/python -c "import ragas, sentence_transformers; print('ragas', ragas.__version__, 'in $(RAGAS_VENV)')"
	touch $@

clean-data:
	rm -rf data
