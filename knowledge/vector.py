"""Dense vectors in Chroma: a local ``PersistentClient`` under the index dir, or a server.

``CSAGENT_CHROMA_URL`` (``KnowledgeConfig.chroma_url``) switches to ``chromadb.HttpClient``.
Chroma's default embedding function is never used (it downloads a model): vectors are always
passed in, and collections are created with ``embedding_function=None`` in cosine space.

Collection names never depend on where the index lives, so a copied or moved index keeps its
vector search: a local store (``<index>/chroma``) is named after the embedding model only; on a
server the name adds the index's own ``index_id`` (a random id written into the manifest at the
first ingest), so two indexes never share a collection. The name recorded in the manifest
always wins, which keeps indexes built by older versions (named after their absolute path)
working after a move, with no migration step.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
from numpy.typing import NDArray

from contracts.errors import IndexNotFoundError, UsageError

logger = logging.getLogger(__name__)

CHROMA_DIR = "chroma"
MANIFEST = "manifest.json"

# HNSW settings: with Chroma's defaults (ef 100, 16 neighbours, one build thread per core) two
# builds of the demo KB (607 chunks) returned a different top-20 for 6 of 398 dev questions, and
# each missed a nearer chunk than one it returned for 2-4 of them. A single build thread makes
# the graph the same on every build; a wider search and denser graph make it exact at this size
# (0 of 398 differ from brute force, docs/results/answerability.md, nineteenth part).
HNSW_SEARCH_EF = 400  # candidates explored per query; mutable, so older collections get it on open
HNSW_CONSTRUCTION_EF = 400
HNSW_NEIGHBOURS = 32
HNSW_CONFIG = {"space": "cosine", "ef_construction": HNSW_CONSTRUCTION_EF, "ef_search": HNSW_SEARCH_EF,
               "max_neighbors": HNSW_NEIGHBOURS, "num_threads": 1}


def _widen_search(collection: Any) -> None:
    """Raise an existing collection's HNSW search width to ``HNSW_SEARCH_EF`` (one thread)."""
    hnsw = (getattr(collection, "configuration", None) or {}).get("hnsw") or {}
    if int(hnsw.get("ef_search") or 0) >= HNSW_SEARCH_EF:
        return
    try:
        collection.modify(configuration={"hnsw": {"ef_search": HNSW_SEARCH_EF, "num_threads": 1}})
    except Exception as exc:  # noqa: BLE001 - an older server may refuse; the search still works
        logger.warning("could not widen the HNSW search of %s: %s", getattr(collection, "name", "?"), exc)


def collection_name(index_dir: Path, embedding_model: str, index_id: str | None = None) -> str:
    """Return a valid Chroma collection name for an embedding model (and, on a server, an index).

    ``index_dir`` is accepted for compatibility and not used: the name must survive a move.
    """
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", Path(embedding_model).name or embedding_model)
    slug = slug.strip("-._")[:40] or "model"
    digest = hashlib.sha1(f"{index_id or ''}\x00{embedding_model}".encode()).hexdigest()[:12]
    return f"csagent-{slug}-{digest}"


def _manifest(index_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(index_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def resolve_collection_name(
    index_dir: Path,
    embedding_model: str,
    chroma_url: str | None = None,
    index_id: str | None = None,
) -> str:
    """Return the collection of this index: the manifest's recorded one, else a fresh name.

    The recorded name is used when the manifest was built with the same embedding model and
    the same kind of store (local or the same server); otherwise the name is derived from the
    model (local) or the model and the index id (server).
    """
    manifest = _manifest(index_dir)
    recorded = manifest.get("collection")
    if (isinstance(recorded, str) and recorded
            and manifest.get("embedding_model") == embedding_model
            and (manifest.get("chroma_url") or None) == (chroma_url or None)):
        return recorded
    if chroma_url:
        index_id = index_id or str(manifest.get("index_id") or "") or None
        return collection_name(index_dir, embedding_model, index_id)
    return collection_name(index_dir, embedding_model)


def _is_store_damage(exc: BaseException) -> bool:
    """Return True for errors that mean the local Chroma files are unreadable."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in ("malformed", "not a database", "corrupt", "disk image",
                                         "no such table", "database error", "internalerror",
                                         "file is not", "unable to open"))


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
    try:
        return chromadb.PersistentClient(path=str(path), settings=settings)
    except Exception as exc:  # chromadb raises its own InternalError for a damaged file
        raise VectorStoreDamagedError(
            f"the vector store {path} is damaged ({_first_line(exc)}); repair it with "
            f"`csagent ingest PATH --index {index_dir}` (or `--reset`)") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


class VectorStoreDamagedError(IndexNotFoundError):
    """The local Chroma files cannot be read (exit status 3, like a missing index)."""


def drop_local_store(index_dir: Path) -> None:
    """Delete a damaged local Chroma folder (``ingest`` rebuilds it from ``vectors.npy``)."""
    import shutil

    try:
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception as exc:  # noqa: BLE001 - best effort: the folder goes anyway
        logger.debug("could not clear chromadb's client cache: %s", exc)
    shutil.rmtree(Path(index_dir) / CHROMA_DIR, ignore_errors=True)


class ChromaStore:
    """One Chroma collection of chunk vectors (cosine space, vectors supplied by us).

    Args:
        index_dir: The index folder (the local store lives in ``<index_dir>/chroma``).
        embedding_model: The model the vectors come from.
        chroma_url: A Chroma server instead of the local store.
        name: The collection name (default: :func:`resolve_collection_name`).
        index_id: The index's own id (names a server collection of a new index).

    Raises:
        VectorStoreDamagedError: The local store's files are unreadable.

    """

    def __init__(self, index_dir: Path, embedding_model: str, chroma_url: str | None = None,
                 *, name: str | None = None, index_id: str | None = None) -> None:
        self.name = name or resolve_collection_name(index_dir, embedding_model, chroma_url,
                                                    index_id)
        self.client = make_client(index_dir, chroma_url)
        self._collection: Any = None

    @property
    def collection(self) -> Any:
        """Return the collection, creating it (cosine space, ``HNSW_CONFIG``, no embedding function) if needed.

        A collection built with narrower search settings (by an older version) gets
        ``HNSW_SEARCH_EF`` and one thread on open: those two can change after creation.
        """
        if self._collection is None:
            self._collection = self.client.get_or_create_collection(
                self.name,
                embedding_function=None,
                configuration={"hnsw": dict(HNSW_CONFIG)},
                metadata={"created_by": "csagent"},
            )
            _widen_search(self._collection)
        return self._collection

    def reset(self) -> None:
        """Delete the collection (it is recreated empty on next use)."""
        try:
            self.client.delete_collection(self.name)
        except Exception:  # not found: nothing to delete
            logger.debug("collection %s did not exist", self.name)
        self._collection = None

    def count(self) -> int:
        """Return the number of vectors stored.

        Raises:
            VectorStoreDamagedError: The local store's files are unreadable.

        """
        try:
            return int(self.collection.count())
        except Exception as exc:
            if _is_store_damage(exc):
                raise VectorStoreDamagedError(
                    f"the vector store of collection {self.name} is damaged "
                    f"({_first_line(exc)}); repair it with `csagent ingest`") from exc
            raise

    def exists(self) -> bool:
        """Return True when the collection exists (without creating it)."""
        try:
            names = [getattr(c, "name", c) for c in self.client.list_collections()]
        except Exception as exc:  # noqa: BLE001 - treat an unreadable listing as missing
            logger.debug("cannot list collections: %s", exc)
            return False
        return self.name in names

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
