"""The module ``langgraph.json`` points at: ``graph`` compiled eagerly for ``langgraph dev``.

Compiled WITHOUT a checkpointer (the LangGraph server brings its own) from
``csagent.runtime.build_deps(Settings.from_env())``: ``CSAGENT_DATA_DIR``/``CSAGENT_INDEX_DIR``
and ``CSAGENT_LLM_*`` choose the index and the model. Per-run settings (``top_k``,
``max_reflections``, ``domain_profile`` …) come from the run's ``context`` when the client passes
them, else from ``CSAGENT_*`` (``contracts.context``): call > environment > default.
"""

from __future__ import annotations

from typing import Any

from csagent.config import Settings
from csagent.runtime import build_deps
from graph.builder import build_graph


def compile_default() -> Any:
    """Return the csagent graph compiled for a LangGraph server (no checkpointer)."""
    compiled = build_graph(build_deps(Settings.from_env())).compile()
    compiled.name = "csagent"
    return compiled


graph: Any = compile_default()

__all__ = ["compile_default", "graph"]
