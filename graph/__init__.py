"""The csagent graph: ``build_graph(deps)`` (uncompiled; the app compiles it with its own saver).

The compiled graph ``langgraph dev`` serves lives in the app layer (``csagent.langgraph_app``),
since building it needs the app's settings and runtime. ``build_graph`` resolves on first
access, so importing ``graph.state`` and friends stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.builder import build_graph as build_graph

__all__ = ["build_graph"]


def __getattr__(name: str) -> Any:
    """Resolve ``build_graph`` lazily."""
    if name == "build_graph":
        from graph.builder import build_graph

        return build_graph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
