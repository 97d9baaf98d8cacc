"""The module ``langgraph.json`` points at: ``graph`` compiled eagerly for ``langgraph dev``.

The LangGraph server reads ``graph`` from the module's namespace (it does not call a module
``__getattr__``), so the lazy export of :mod:`graph` is materialised here. It is compiled WITHOUT a
checkpointer (the server brings its own) from ``csagent.runtime.build_deps(Settings.from_env())``:
``CSAGENT_DATA_DIR``/``CSAGENT_INDEX_DIR`` and ``CSAGENT_LLM_*`` choose the index and the model.
"""

from __future__ import annotations

from typing import Any

from graph import _compile_default

graph: Any = _compile_default()

__all__ = ["graph"]
