"""The one seam for heavy dependencies: models, retriever, tools, and the chosen strategies.

Nodes never construct models or choose strategies themselves; ``graph.builder.build_graph(deps)``
closes over a ``Deps``. The app's runtime (``csagent.runtime.build_deps``) builds it with
:func:`strategies.combined.select`; tests pass fakes through the same seam (when
``strategies`` is not given, it is selected from ``llm`` and ``embedder`` the same way).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contracts.tools import ToolBackend
from strategies.combined import Strategies, select
from strategies.protocols import Embedder

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from knowledge.types import Retriever

ShopTools = ToolBackend  # the older name of the tool backend protocol

__all__ = ["Deps", "Embedder", "ShopTools", "Strategies"]


@dataclass
class Deps:
    """Everything heavy a graph run needs. ``llm=None`` selects the offline deterministic path."""

    retriever: Retriever
    shop: ToolBackend
    llm: BaseChatModel | None = None
    embedder: Embedder | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    strategies: Strategies = field(default=None)  # type: ignore[assignment]  # set in __post_init__

    def __post_init__(self) -> None:
        if self.strategies is None:
            self.strategies = select(self.llm, embedder=self.embedder)
