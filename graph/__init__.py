"""The csagent graph: ``build_graph(deps)`` and, for ``langgraph dev``, a lazily compiled ``graph``.

``graph`` is compiled WITHOUT a checkpointer (the LangGraph server supplies its own) from
``csagent.runtime.build_deps(Settings.from_env())``, so ``CSAGENT_DATA_DIR``/``CSAGENT_INDEX_DIR``
and the ``CSAGENT_LLM_*`` variables choose the index and the model. Both names resolve on first
access (module ``__getattr__``), so importing ``graph.state`` and friends stays cheap and free of
import cycles.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.builder import build_graph as build_graph

__all__ = ["build_graph", "graph"]

_LOCK = threading.Lock()
_COMPILED: dict[str, Any] = {}


def _compile_default() -> Any:
    from csagent.config import Settings
    from csagent.runtime import build_deps
    from graph.builder import build_graph

    with _LOCK:
        if "graph" not in _COMPILED:
            compiled = build_graph(build_deps(Settings.from_env())).compile()
            compiled.name = "csagent"
            _COMPILED["graph"] = compiled
        return _COMPILED["graph"]


def __getattr__(name: str) -> Any:
    """Resolve ``build_graph`` and ``graph`` lazily."""
    if name == "build_graph":
        from graph.builder import build_graph

        return build_graph
    if name == "graph":
        return _compile_default()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
