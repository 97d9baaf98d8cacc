"""The one seam for heavy dependencies: models, retriever, shop tools. Tests pass fakes here.

Nodes never construct models themselves; ``build_graph(deps)`` closes over a ``Deps``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from knowledge.types import Retriever
    from shop.types import ToolResult, ToolSpec


class Embedder(Protocol):
    """Encodes queries to normalised vectors (used by the offline intent router)."""

    def embed_queries(self, texts: list[str]) -> Any:
        """Return an (n, d) float32 array of normalised vectors."""
        ...


class ShopTools(Protocol):
    """The business tools that really exist (the capability boundary)."""

    def specs(self) -> list[ToolSpec]:
        """Return every registered tool spec."""
        ...

    def call(self, name: str, args: dict[str, Any], *, user_id: str) -> ToolResult:
        """Run a tool for ``user_id`` with a timeout; never raises, returns a ToolResult."""
        ...


@dataclass
class Deps:
    """Everything heavy a graph run needs. ``llm=None`` selects the offline deterministic path."""

    retriever: Retriever
    shop: ShopTools
    llm: BaseChatModel | None = None
    embedder: Embedder | None = None
    extras: dict[str, Any] = field(default_factory=dict)
