# csagent: the two commands are `make demo` and `make test`; each does all set-up from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CSAGENT := $(VENV)/bin/csagent
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LANGSMITH_TRACING := false
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export LANGFUSE_TRACING_ENABLED ?= false

.PHONY: install index demo test test-unit test-integration lint bench eval clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

index: install
	$(CSAGENT) ingest data/kb

demo: index
	$(CSAGENT) demo

test: index
	$(PY) -m pytest tests

test-unit: install
	$(PY) -m pytest tests/unit

test-integration: index
	$(PY) -m pytest tests/integration

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: index
	$(PY) -m eval.retrieval_bench --report reports/retrieval
	$(PY) -m eval.latency_bench --report reports/latency

eval: index
	$(CSAGENT) eval --report reports/eval

clean:
	rm -rf $(VENV) .langgraph_api reports
