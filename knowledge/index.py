"""The searchable knowledge index: loads once, then answers ``search`` fast.

Layout of an index dir (written by :mod:`knowledge.ingest`)::

    manifest.json   format, embedding model, chunking settings, documents and their chunk ids
    chunks.jsonl    one Chunk per line (index order)
    tokens.json     BM25 tokens per chunk (used only to rebuild BM25 on ingest)
    vectors.npy     float32 (n_chunks, dim) passage vectors in index order
    bm25.npz/.json  BM25 weight matrix and vocabulary
    chroma/         the Chroma collection (unless CSAGENT_CHROMA_URL points at a server)
    cache/          vector cache (content hash -> vector); .jieba/ jieba's dictionary cache

Search (hybrid): BM25 top ``recall_k`` (the query's terms plus, with weight ``place_weight``,
the region terms of the cities it names: :func:`knowledge.normalize.place_terms`) and Chroma top
``recall_k``, union, exact cosine and BM25 for every candidate, fusion (:mod:`knowledge.fusion`),
demotion of chunks from superseded documents (``superseded_penalty``; skipped when the query asks
for an old version or dates its event by the calendar), optional rerank, top ``k``. ``Hit.fused`` is the score after demotion.
"""

from __future__ import annotations

import json
import logging
import time
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contracts.errors import IndexNotFoundError, UsageError
from knowledge.bm25 import BM25Index
from knowledge.config import KnowledgeConfig
from knowledge.embeddings import Embedder, get_embedder
from knowledge.fusion import demote, fuse
from knowledge.normalize import (
    asks_for_old_version,
    configure_jieba,
    names_a_calendar_date,
    place_terms,
    tokenize_query,
)
from knowledge.rerank import CrossEncoderReranker, LexicalReranker, Reranker, resolve_reranker_name
from knowledge.types import Chunk, Hit, SearchMode
from knowledge.vector import ChromaStore

logger = logging.getLogger(__name__)

FORMAT = 3
MANIFEST = "manifest.json"
CHUNKS = "chunks.jsonl"
TOKENS = "tokens.json"
VECTORS = "vectors.npy"
CACHE_DIR = "cache"
JIEBA_DIR = ".jieba"
MODES: tuple[str, ...] = ("bm25", "vector", "hybrid")
STAGES: tuple[str, ...] = ("encode", "bm25", "dense", "fusion", "rerank")


def read_manifest(index_dir: Path) -> dict[str, Any] | None:
    """Return the manifest of ``index_dir`` or None when there is no index."""
    path = Path(index_dir) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise IndexNotFoundError(f"the index at {index_dir} is damaged ({exc}); re-run "
                                 f"`csagent ingest --reset`") from exc
    return data if isinstance(data, dict) else None


def read_chunks(index_dir: Path) -> list[Chunk]:
    """Read ``chunks.jsonl`` in index order.

    Raises:
        IndexNotFoundError: The file is damaged (truncated, not UTF-8, not chunk records);
            the message names the line.

    """
    path = Path(index_dir) / CHUNKS
    if not path.is_file():
        return []
    chunks: list[Chunk] = []
    number = 0
    try:
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if line.strip():
                    chunks.append(Chunk.from_dict(json.loads(line)))
    except (ValueError, TypeError, AttributeError) as exc:  # JSON, UTF-8 and field errors
        raise IndexNotFoundError(
            f"the index at {index_dir} is damaged ({CHUNKS} line {number}: "
            f"{type(exc).__name__}); re-run `csagent ingest PATH --index {index_dir} --reset`"
        ) from None
    return chunks


class KnowledgeIndex:
    """A loaded index (implements :class:`knowledge.types.Retriever`)."""

    def __init__(
        self,
        index_dir: Path,
        config: KnowledgeConfig,
        manifest: dict[str, Any],
        chunks: list[Chunk],
        bm25: BM25Index,
        vectors: NDArray[np.float32],
        store: ChromaStore,
        embedder: Embedder,
    ) -> None:
        self.index_dir = index_dir
        self.config = config
        self.manifest = manifest
        self._chunks = chunks
        self._positions = {c.chunk_id: i for i, c in enumerate(chunks)}
        self._superseded = np.fromiter((c.superseded_by is not None for c in chunks), dtype=bool,
                                       count=len(chunks))
        self.bm25 = bm25
        self.vectors = vectors
        self.store = store
        self.embedder = embedder
        self._rerankers: dict[str, Reranker | None] = {}
        # Set when the Chroma collection is missing, out of sync or fails: dense recall then
        # runs exactly over ``vectors`` (same ranking, linear cost) and callers can say so.
        self.vector_problem: str | None = None

    @classmethod
    def open(cls, index_dir: str | Path, config: KnowledgeConfig | None = None) -> KnowledgeIndex:
        """Load the index in ``index_dir``.

        Raises:
            IndexNotFoundError: there is no index there (run ``csagent ingest`` first).

        """
        index_dir = Path(index_dir)
        manifest = read_manifest(index_dir)
        if manifest is None:
            raise IndexNotFoundError(
                f"no knowledge index at {index_dir}; build one with `csagent ingest PATH "
                f"--index {index_dir}`"
            )
        config = config or KnowledgeConfig()
        built_format = (manifest.get("settings") or {}).get("format")
        if built_format != FORMAT:
            logger.warning("the index at %s was built by another version of csagent (format %s, "
                           "expected %s); re-run `csagent ingest` to rebuild it", index_dir,
                           built_format, FORMAT)
        model = str(manifest.get("embedding_model") or config.embedding_model)
        if model != config.embedding_model:
            logger.warning("index %s was built with embedding model %r; using it (config says %r)",
                           index_dir, model, config.embedding_model)
            config = replace(config, embedding_model=model)
        configure_jieba(index_dir / JIEBA_DIR)
        chunks = read_chunks(index_dir)
        try:
            bm25 = BM25Index.load(index_dir)
            vectors = np.load(index_dir / VECTORS) if chunks else np.zeros((0, 1), np.float32)
        except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile) as exc:
            detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise IndexNotFoundError(f"the index at {index_dir} is incomplete ({detail}); re-run "
                                     f"`csagent ingest PATH --index {index_dir} --reset`") from None
        if len(vectors) != len(chunks) or bm25.n_docs != len(chunks):
            raise IndexNotFoundError(f"the index at {index_dir} is inconsistent; re-run "
                                     f"`csagent ingest --reset`")
        embedder = get_embedder(model)
        store = ChromaStore(index_dir, model, config.chroma_url)
        index = cls(index_dir, config, manifest, chunks, bm25, vectors, store, embedder)
        stored = store.count()
        if stored != len(chunks):
            index.vector_problem = (
                f"the vector store (Chroma collection {store.name}) holds {stored} vectors but "
                f"the index has {len(chunks)} chunks; vector search uses the exact vectors of "
                f"{VECTORS} instead (run `csagent ingest PATH --index {index_dir}` to repair it)")
            logger.warning("%s", index.vector_problem)
        return index

    # -- lookups -----------------------------------------------------------------------------
    def chunks(self) -> list[Chunk]:
        """Return every chunk in index order."""
        return list(self._chunks)

    def documents(self) -> list[dict[str, Any]]:
        """Return the indexed documents (id, title, source, version, status, chunk ids …)."""
        docs = self.manifest.get("docs", {})
        return [dict(info, doc_id=doc_id) for doc_id, info in sorted(docs.items())]

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        """Return a chunk by id, or None."""
        pos = self._positions.get(chunk_id)
        return self._chunks[pos] if pos is not None else None

    def __len__(self) -> int:
        return len(self._chunks)

    # -- rerankers ---------------------------------------------------------------------------
    def reranker(self, name: str | None = None) -> Reranker | None:
        """Return the reranker for ``name`` (default: the configured one); None means no rerank."""
        key = resolve_reranker_name(name if name is not None else self.config.reranker)
        if key not in self._rerankers:
            if key in ("none", "off", ""):
                self._rerankers[key] = None
            elif key == "lexical":
                self._rerankers[key] = LexicalReranker(self.bm25, self._positions)
            else:
                self._rerankers[key] = CrossEncoderReranker(key)
        return self._rerankers[key]

    # -- search ------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        mode: SearchMode = "hybrid",
        k: int = 5,
        rerank: bool | None = None,
        recall_k: int | None = None,
    ) -> list[Hit]:
        """Return the top ``k`` hits for ``query``.

        Args:
            query: the user's question (any spelling: it is normalised).
            mode: ``"bm25"``, ``"vector"`` or ``"hybrid"``.
            k: number of hits to return.
            rerank: True/False forces the configured reranker on/off; None uses the default
                (on when a reranker is configured).
            recall_k: candidates per retriever before fusion/rerank (default: config.recall_k).

        Raises:
            UsageError: empty query, unknown mode, or k < 1.

        """
        hits, _ = self.search_timed(query, mode=mode, k=k, rerank=rerank, recall_k=recall_k)
        return hits

    def search_timed(
        self,
        query: str,
        *,
        mode: SearchMode = "hybrid",
        k: int = 5,
        rerank: bool | None = None,
        recall_k: int | None = None,
        reranker: Reranker | None | str = "config",
        fusion: str | None = None,
        alpha: float | None = None,
        superseded_penalty: float | None = None,
        place_weight: float | None = None,
    ) -> tuple[list[Hit], dict[str, float]]:
        """Run :meth:`search` and return the hits with per-stage milliseconds.

        The extra arguments (``reranker``, ``fusion``, ``alpha``, ``superseded_penalty``,
        ``place_weight``; None = the config's value) let the benchmark sweep settings without
        reloading the index.
        """
        if not isinstance(query, str) or not query.strip():
            raise UsageError("the query is empty")
        if mode not in MODES:
            raise UsageError(f"unknown search mode {mode!r} (choose from {', '.join(MODES)})")
        if k < 1:
            raise UsageError(f"k must be at least 1, got {k}")
        timings = dict.fromkeys(STAGES, 0.0)
        if not self._chunks:
            return [], timings
        recall = max(recall_k or self.config.recall_k, k)
        if isinstance(reranker, str):
            ranker = self.reranker() if reranker == "config" else self.reranker(reranker)
        else:
            ranker = reranker
        if rerank is False:
            ranker = None
        elif rerank is True and ranker is None:
            ranker = self.reranker("lexical")
        fusion = fusion or self.config.fusion
        alpha = self.config.fusion_alpha if alpha is None else alpha
        if superseded_penalty is None:
            superseded_penalty = self.config.superseded_penalty
        if place_weight is None:
            place_weight = self.config.place_weight

        bm25_scores: NDArray[np.float32] | None = None
        bm25_top: list[int] = []
        if mode in ("bm25", "hybrid"):
            t0 = time.perf_counter()
            bm25_scores = self.bm25.scores(tokenize_query(query))
            extra = place_terms(query) if place_weight else ()
            if extra:
                bm25_scores = bm25_scores + np.float32(place_weight) * self.bm25.scores(extra)
            n = recall if (mode == "hybrid" or ranker) else k
            idx, _ = _top(bm25_scores, n)
            bm25_top = [int(i) for i in idx]
            timings["bm25"] = (time.perf_counter() - t0) * 1000
        qvec: NDArray[np.float32] | None = None
        dense_top: list[int] = []
        if mode in ("vector", "hybrid"):
            t0 = time.perf_counter()
            qvec = self.embedder.embed_queries([query])[0]
            timings["encode"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            n = recall if (mode == "hybrid" or ranker) else k
            dense_top = self._dense_recall(qvec, min(n, len(self._chunks)))
            timings["dense"] = (time.perf_counter() - t0) * 1000

        t0 = time.perf_counter()
        if mode == "bm25":
            assert bm25_scores is not None
            hits = [Hit(chunk=self._chunks[i], score=float(bm25_scores[i]),
                        bm25=float(bm25_scores[i])) for i in bm25_top]
        elif mode == "vector":
            assert qvec is not None
            cos = self.vectors[dense_top] @ qvec if dense_top else np.zeros(0)
            order = np.argsort(-cos, kind="stable")
            hits = [Hit(chunk=self._chunks[dense_top[j]], score=float(cos[j]), dense=float(cos[j]))
                    for j in order]
        else:
            assert bm25_scores is not None and qvec is not None
            cands = list(dict.fromkeys(bm25_top + dense_top))
            b = bm25_scores[cands].astype(np.float64)
            c = (self.vectors[cands] @ qvec).astype(np.float64)
            fused = fuse(fusion, b, c, alpha, [[str(i) for i in bm25_top],
                         [str(i) for i in dense_top]], [str(i) for i in cands])
            if superseded_penalty:
                old = self._superseded[cands]
                if old.any() and not asks_for_old_version(query) and not names_a_calendar_date(query):
                    fused = demote(fused, old, superseded_penalty)
            order = np.lexsort((np.asarray(cands), -fused))
            hits = [Hit(chunk=self._chunks[cands[j]], score=float(fused[j]), bm25=float(b[j]),
                        dense=float(c[j]), fused=float(fused[j])) for j in order]
        timings["fusion"] = (time.perf_counter() - t0) * 1000

        if ranker is not None and hits:
            t0 = time.perf_counter()
            pool = hits[:recall]
            scores = ranker.score(query, pool)
            order = np.argsort(-scores, kind="stable")
            hits = [replace(pool[j], score=float(scores[j]), rerank=float(scores[j])) for j in order]
            timings["rerank"] = (time.perf_counter() - t0) * 1000
        return hits[:k], timings


    def _dense_recall(self, qvec: NDArray[np.float32], n: int) -> list[int]:
        """Return the positions of the ``n`` nearest chunks: Chroma, or exact when it is unusable."""
        if self.vector_problem is None:
            try:
                ids, _ = self.store.query(qvec, n)
                return [self._positions[i] for i in ids if i in self._positions]
            except Exception as exc:  # noqa: BLE001 - a broken store must not fail a search
                self.vector_problem = (f"the vector store failed ({type(exc).__name__}: "
                                       f"{str(exc)[:160]}); using the exact vectors instead")
                logger.error("%s", self.vector_problem)
        sims = self.vectors @ qvec
        if n >= len(sims):
            order = np.argsort(-sims, kind="stable")
        else:
            part = np.argpartition(-sims, n - 1)[:n]
            order = part[np.argsort(-sims[part], kind="stable")]
        return [int(i) for i in order[:n]]


def _top(scores: NDArray[np.float32], n: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Return indices and scores of the ``n`` best positive scores, best first (stable ties)."""
    nonzero = np.flatnonzero(scores > 0)
    if nonzero.size > n:
        part = np.argpartition(-scores[nonzero], n - 1)[:n]
        nonzero = np.sort(nonzero[part])
    order = np.argsort(-scores[nonzero], kind="stable")
    idx = nonzero[order]
    return idx.astype(np.int64), scores[idx]


def positions_of(chunks: Sequence[Chunk]) -> dict[str, int]:
    """Return chunk id → index position."""
    return {c.chunk_id: i for i, c in enumerate(chunks)}
