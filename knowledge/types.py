"""Data types shared by the knowledge layer and its users (the graph nodes, eval, the CLI)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

ChunkKind = Literal["text", "table"]
SearchMode = Literal["bm25", "vector", "hybrid"]


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """One retrievable piece of a document.

    ``chunk_id`` is stable: the same content under the same document and heading path gives the
    same id on every ingest. ``retrieval_text`` is what BM25 and the embedder see (for a table:
    the one-line summary, heading path, column headers and rows); ``text`` is what is shown and cited.
    """

    chunk_id: str
    doc_id: str
    title: str
    text: str
    retrieval_text: str
    heading_path: tuple[str, ...] = ()
    kind: ChunkKind = "text"
    source: str = ""
    version: str = ""
    effective_date: str = ""
    superseded_by: str | None = None  # id of the document that replaces this one, if any
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        data = asdict(self)
        data["heading_path"] = list(self.heading_path)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        """Build a chunk from :meth:`to_dict` output."""
        data = dict(data)
        data["heading_path"] = tuple(data.get("heading_path") or ())
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class Hit:
    """A search result: the chunk and every score the pipeline computed for it."""

    chunk: Chunk
    score: float  # the final ranking score (rerank if reranked, else fused, else the mode's score)
    bm25: float | None = None
    dense: float | None = None  # cosine similarity
    fused: float | None = None
    rerank: float | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the public JSON shape used by ``csagent search --json``."""
        return {
            "chunk_id": self.chunk.chunk_id,
            "doc_id": self.chunk.doc_id,
            "score": round(float(self.score), 6),
            "title": self.chunk.title,
            "text": self.chunk.text,
        }


class Retriever(Protocol):
    """What the graph needs from the knowledge layer."""

    def search(
        self,
        query: str,
        *,
        mode: SearchMode = "hybrid",
        k: int = 5,
        rerank: bool | None = None,
        recall_k: int | None = None,
    ) -> list[Hit]:
        """Return the top ``k`` hits for ``query`` (``rerank=None`` means the configured default)."""
        ...

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        """Return a chunk by id, or None."""
        ...
