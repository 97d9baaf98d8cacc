"""Dense vectors in Chroma: a local ``PersistentClient`` under the index dir, or a server.

``CSAGENT_CHROMA_URL`` (``KnowledgeConfig.chroma_url``) switches to ``chromadb.HttpClient``.
Chroma's default embedding function is never used (it downloads a model): vectors are always
passed in, and collections are created with ``embedding_function=None`` in cosine space. The
collection name is derived from the index dir and the embedding model, so two indexes (or two
models) never share a collection on one server.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
from numpy.typing import NDArray

from csagent.errors import UsageError

logger = logging.getLogger(__name__)

CHROMA_DIR = "chroma"


def collection_name(index_dir: Path, embedding_model: str) -> str:
    """Return a valid Chroma collection name for this index dir and embedding model."""
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", Path(embedding_model).name or embedding_model)
    slug = slug.strip("-._")[:40] or "model"
    digest = hashlib.sha1(
        f"{Path(index_dir).resolve()}\x00{embedding_model}".encode()
    ).hexdigest()[:12]
    return f"csagent-{slug}-{digest}"


def make_client(index_dir: Path, chroma_url: str | None) -> Any:
    """Return a Chroma client: ``HttpClient(chroma_url)`` or a ``PersistentClient`` in the index dir."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if chroma_url:
        parsed = urlparse(chroma_url if "://" in chroma_url else f"http://{chroma_url}")
        if not parsed.hostname:
            raise UsageError(f"bad CSAGENT_CHROMA_URL {chroma_url!r} (expected http://host:port)")
        try:
            return chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=settings,
            )
        except Exception as exc:  # chromadb raises plain exceptions on connection errors
            raise UsageError(f"cannot reach the Chroma server at {chroma_url}: {exc}") from exc
    path = Path(index_dir) / CHROMA_DIR
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=settings)


class ChromaStore:
    """One Chroma collection of chunk vectors (cosine space, vectors supplied by us)."""

    def __init__(self, index_dir: Path, embedding_model: str, chroma_url: str | None = None) -> None:
        self.name = collection_name(index_dir, embedding_model)
        self.client = make_client(index_dir, chroma_url)
        self._collection: Any = None

    @property
    def collection(self) -> Any:
        """Return the collection, creating it (cosine space, no embedding function) if needed."""
        if self._collection is None:
            self._collection = self.client.get_or_create_collection(
                self.name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"created_by": "csagent"},
            )
        return self._collection

    def reset(self) -> None:
        """Delete the collection (it is recreated empty on next use)."""
        try:
            self.client.delete_collection(self.name)
        except Exception:  # not found: nothing to delete
            logger.debug("collection %s did not exist", self.name)
        self._collection = None

    def count(self) -> int:
        """Return the number of vectors stored."""
        return int(self.collection.count())

    def ids(self) -> set[str]:
        """Return every id stored (used to repair a collection out of sync with the index)."""
        out: set[str] = set()
        offset = 0
        while True:
            got = self.collection.get(include=[], limit=5000, offset=offset)
            batch = got["ids"]
            out.update(batch)
            if len(batch) < 5000:
                return out
            offset += len(batch)

    def upsert(
        self,
        ids: Sequence[str],
        vectors: NDArray[np.float32],
        metadatas: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Insert or replace vectors by id (batched to the client's maximum)."""
        if not ids:
            return
        try:
            max_batch = int(self.client.get_max_batch_size())
        except Exception:
            max_batch = 5000
        step = max(1, min(max_batch, 5000))
        for start in range(0, len(ids), step):
            end = start + step
            self.collection.upsert(
                ids=list(ids[start:end]),
                embeddings=np.asarray(vectors[start:end], dtype=np.float32),
                metadatas=list(metadatas[start:end]) if metadatas else None,
            )

    def delete(self, ids: Sequence[str]) -> None:
        """Delete vectors by id."""
        for start in range(0, len(ids), 5000):
            self.collection.delete(ids=list(ids[start:start + 5000]))

    def query(self, vector: NDArray[np.float32], n: int) -> tuple[list[str], NDArray[np.float32]]:
        """Return the ``n`` nearest ids and their cosine similarities (best first)."""
        if n <= 0:
            return [], np.zeros(0, dtype=np.float32)
        result = self.collection.query(
            query_embeddings=np.asarray(vector, dtype=np.float32)[None, :],
            n_results=n,
            include=["distances"],
        )
        ids = list(result["ids"][0])
        distances = np.asarray(result["distances"][0], dtype=np.float32)
        return ids, 1.0 - distances
