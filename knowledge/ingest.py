"""Incremental ingestion: documents → chunks → BM25 + vectors (Chroma) in an index dir.

Unchanged documents (same content hash) are skipped, changed ones replaced, and documents that
were ingested from under one of the given paths but are gone now are deleted (documents from
other paths stay). ``reset=True`` starts from an empty index (the vector cache is kept, so
unchanged texts are still not re-embedded). A change of embedding model or chunking settings
rebuilds everything. Files are written to temporary names and renamed, so a crash never leaves
a half-written index behind.

Screening: with ``screen`` (a function text → findings, e.g.
:func:`strategies.rules.hygiene.scan`, wired in by the CLI), every chunk is checked and the
passages with instructions addressed to the assistant, credential requests or unknown contact
points are listed in :attr:`IngestReport.flagged` (they stay in the index; the answer path
never relays them). A damaged local vector store is rebuilt from ``vectors.npy``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contracts.errors import UsageError
from knowledge.bm25 import BM25Index
from knowledge.chunking import TABLE_CHARS, chunk_document
from knowledge.config import KnowledgeConfig
from knowledge.embeddings import (
    PASSAGE_CHARS,
    VectorCache,
    embed_passages_cached,
    get_embedder,
    passage_input,
)
from knowledge.index import (
    CACHE_DIR,
    CHUNKS,
    FORMAT,
    JIEBA_DIR,
    MANIFEST,
    TOKENS,
    VECTORS,
    read_chunks,
    read_manifest,
)
from knowledge.loaders import Document, Skipped, load_documents
from knowledge.normalize import NORMALIZER_VERSION, bm25_terms, configure_jieba
from knowledge.types import Chunk
from knowledge.vector import (
    ChromaStore,
    VectorStoreDamagedError,
    collection_name,
    drop_local_store,
)

logger = logging.getLogger(__name__)

PROGRESS_MIN = 32  # show a progress bar when at least this many chunks must be embedded
FLAG_TEXT_CHARS = 80  # characters of a flagged passage shown in the report
Screen = Callable[[str], Sequence[Mapping[str, Any]]]


@dataclass(kw_only=True)
class IngestReport:
    """What an ingest did."""

    index_dir: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    chunks: int = 0
    chunks_embedded: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    flagged: list[dict[str, Any]] = field(default_factory=list)
    repaired_vector_store: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {
            "index_dir": self.index_dir,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "chunks": self.chunks,
            "chunks_embedded": self.chunks_embedded,
            "skipped": [{"path": s.path, "line": s.line, "reason": s.reason} for s in self.skipped],
            "flagged": self.flagged,
            "repaired_vector_store": self.repaired_vector_store,
            "seconds": round(self.seconds, 3),
        }

    def summary(self) -> str:
        """Return a short human-readable summary."""
        lines = [
            f"index {self.index_dir}: {len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.deleted)} deleted documents; "
            f"{self.chunks} chunks ({self.chunks_embedded} embedded) in {self.seconds:.1f} s"
        ]
        lines.extend(f"skipped {s}" for s in self.skipped)
        if self.repaired_vector_store:
            lines.append("repaired the damaged vector store (rebuilt from the stored vectors)")
        if self.flagged:
            lines.append(f"flagged {len(self.flagged)} passages that answers will not relay "
                         "(instructions to the assistant, credential requests, unknown contacts):")
        lines.extend(f"flagged {f['chunk_id']} ({f['source']}): {', '.join(f['kinds'])}: "
                     f"{f['text']}" for f in self.flagged)
        return "\n".join(lines)


def _settings_key(config: KnowledgeConfig) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "embedding_model": config.embedding_model,
        "chunk_size": config.chunk_size,
        "chunk_overlap": config.chunk_overlap,
        "passage_chars": PASSAGE_CHARS,
        "table_chars": TABLE_CHARS,
        "normalizer": NORMALIZER_VERSION,
    }


def _under(source: str, roots: list[Path]) -> bool:
    try:
        src = Path(source).resolve()
    except OSError:
        return False
    return any(src == root or root in src.parents for root in roots)


def _write_atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def _save_index(
    index_dir: Path,
    manifest: dict[str, Any],
    chunks: list[Chunk],
    tokens: list[list[str]],
    vectors: np.ndarray,
) -> None:
    index_dir.mkdir(parents=True, exist_ok=True)
    bm25 = BM25Index.build(tokens)
    tmp_dir = index_dir / ".bm25.tmp"
    tmp_dir.mkdir(exist_ok=True)
    bm25.save(tmp_dir)
    for name in ("bm25.npz", "bm25.json"):
        os.replace(tmp_dir / name, index_dir / name)
    tmp_dir.rmdir()

    def write_chunks(p: Path) -> None:
        with p.open("w", encoding="utf-8") as fh:
            for c in chunks:
                fh.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")

    def write_vectors(p: Path) -> None:
        with p.open("wb") as fh:
            np.save(fh, np.asarray(vectors, dtype=np.float32))

    _write_atomic(index_dir / CHUNKS, write_chunks)
    _write_atomic(index_dir / TOKENS,
                  lambda p: p.write_text(json.dumps(tokens, ensure_ascii=False), encoding="utf-8"))
    _write_atomic(index_dir / VECTORS, write_vectors)
    # the manifest last: it is what marks the index as complete
    _write_atomic(index_dir / MANIFEST,
                  lambda p: p.write_text(json.dumps(manifest, ensure_ascii=False, indent=1),
                                         encoding="utf-8"))


def _screen_chunks(chunks: Iterable[Chunk], screen: Screen | None) -> list[dict[str, Any]]:
    """Return one report row per chunk with findings (kinds and the first matched text)."""
    if screen is None:
        return []
    rows: list[dict[str, Any]] = []
    for chunk in chunks:
        findings = list(screen(chunk.text))
        if not findings:
            continue
        kinds = list(dict.fromkeys(str(f.get("kind")) for f in findings))
        text = " | ".join(dict.fromkeys(str(f.get("text", "")).replace("\n", " ") for f in findings))
        rows.append({"doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id, "source": chunk.source,
                     "kinds": kinds, "text": text[:FLAG_TEXT_CHARS]})
    return rows


def _open_store(index_dir: Path, config: KnowledgeConfig, report: IngestReport,
                **kwargs: Any) -> ChromaStore:
    """Open the vector store; a damaged local one is deleted and recreated (rebuilt later)."""
    try:
        store = ChromaStore(index_dir, config.embedding_model, config.chroma_url, **kwargs)
        store.count()
        return store
    except VectorStoreDamagedError as exc:
        if config.chroma_url:
            raise
        logger.warning("%s: rebuilding it", exc)
        drop_local_store(index_dir)
        report.repaired_vector_store = True
        return ChromaStore(index_dir, config.embedding_model, config.chroma_url, **kwargs)


def _reset_dir(index_dir: Path) -> None:
    for name in (MANIFEST, CHUNKS, TOKENS, VECTORS, "bm25.npz", "bm25.json"):
        (index_dir / name).unlink(missing_ok=True)


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled or total < PROGRESS_MIN:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="embedding", unit="chunk", file=sys.stderr, leave=False)


def ingest_paths(
    paths: Iterable[str | Path],
    index_dir: str | Path,
    *,
    config: KnowledgeConfig | None = None,
    reset: bool = False,
    progress: bool = True,
    screen: Screen | None = None,
) -> IngestReport:
    """Ingest folders/files of .md, .txt and .jsonl documents into ``index_dir``.

    Args:
        paths: files or folders (searched recursively).
        index_dir: the index directory (created if missing).
        config: chunking, embedding and Chroma settings.
        reset: start from an empty index.
        progress: show a tqdm progress bar on stderr for long embedding runs.
        screen: text → findings (``kind``, ``text``); chunks with findings are reported in
            ``flagged``.

    Returns:
        The :class:`IngestReport`; bad files and lines are in ``skipped``.

    Raises:
        UsageError: no paths given, or none of them exists.

    """
    started = time.perf_counter()
    config = config or KnowledgeConfig()
    path_list = [Path(p) for p in paths]
    if not path_list:
        raise UsageError("give at least one file or folder to ingest")
    missing = [str(p) for p in path_list if not p.exists()]
    if len(missing) == len(path_list):
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    configure_jieba(index_dir / JIEBA_DIR)
    report = IngestReport(index_dir=str(index_dir))

    docs, skipped = load_documents(path_list)
    report.skipped = skipped
    manifest = None if reset else read_manifest(index_dir)
    settings = _settings_key(config)
    if manifest is not None and manifest.get("settings") != settings:
        logger.warning("index settings changed (embedding, chunking or text normalisation): rebuilding the whole index")
        manifest = None
        reset = True
    index_id = str((manifest or read_manifest(index_dir) or {}).get("index_id") or uuid.uuid4().hex)
    store = _open_store(index_dir, config, report)
    if reset or manifest is None:
        _reset_dir(index_dir)
        store.reset()  # the recorded (possibly old, path-keyed) collection goes
        new_name = collection_name(index_dir, config.embedding_model,
                                   index_id if config.chroma_url else None)
        store = _open_store(index_dir, config, report, name=new_name)
        store.reset()
        manifest = None
    old_docs: dict[str, Any] = dict(manifest["docs"]) if manifest else {}
    old_chunks = read_chunks(index_dir) if manifest else []
    old_tokens: list[list[str]] = []
    old_vectors = np.zeros((0, 0), dtype=np.float32)
    if manifest:
        old_tokens = json.loads((index_dir / TOKENS).read_text(encoding="utf-8"))
        old_vectors = np.load(index_dir / VECTORS)
    old_pos = {c.chunk_id: i for i, c in enumerate(old_chunks)}

    roots = [p.resolve() for p in path_list if p.exists()]
    current = {d.doc_id: d for d in docs}
    changed: list[Document] = []
    for doc in docs:
        info = old_docs.get(doc.doc_id)
        if info is None:
            report.added.append(doc.doc_id)
            changed.append(doc)
        elif info.get("hash") != doc.content_hash:
            report.updated.append(doc.doc_id)
            changed.append(doc)
        else:
            report.unchanged.append(doc.doc_id)
            if info.get("source") != doc.source:
                info["source"] = doc.source
    for doc_id, info in old_docs.items():
        if doc_id not in current and _under(info.get("source", ""), roots):
            report.deleted.append(doc_id)
    stored = store.count()
    in_sync = stored == len(old_chunks)
    if not changed and not report.deleted and in_sync and manifest is not None:
        report.chunks = len(old_chunks)
        report.flagged = _screen_chunks(old_chunks, screen)
        report.seconds = time.perf_counter() - started
        if manifest.get("docs") != old_docs:  # only sources moved: rewrite the manifest
            manifest["docs"] = old_docs
            _write_atomic(index_dir / MANIFEST, lambda p: p.write_text(
                json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8"))
        return report

    # build the new chunk list: kept documents' chunks from the old index, then new ones
    new_doc_chunks: dict[str, list[Chunk]] = {}
    for doc in changed:
        new_doc_chunks[doc.doc_id] = chunk_document(
            doc, chunk_size=config.chunk_size, chunk_overlap=config.chunk_overlap
        )
    removed = set(report.deleted) | {d.doc_id for d in changed}
    doc_infos: dict[str, Any] = {k: v for k, v in old_docs.items() if k not in removed}
    for doc in changed:
        doc_infos[doc.doc_id] = {
            "hash": doc.content_hash,
            "source": doc.source,
            "title": doc.title,
            "version": doc.version,
            "effective_date": doc.effective_date,
            "status": doc.status,
            "supersedes": doc.supersedes,
            "chunk_ids": [c.chunk_id for c in new_doc_chunks[doc.doc_id]],
        }
    superseded_by = {
        info["supersedes"]: doc_id for doc_id, info in doc_infos.items() if info.get("supersedes")
    }
    for doc_id, info in doc_infos.items():
        info["superseded_by"] = superseded_by.get(doc_id)

    chunks: list[Chunk] = []
    tokens: list[list[str]] = []
    vec_rows: list[np.ndarray | None] = []
    to_embed: list[int] = []
    for doc_id in sorted(doc_infos):
        if doc_id in new_doc_chunks:
            for c in new_doc_chunks[doc_id]:
                pos = old_pos.get(c.chunk_id)
                same = pos is not None and old_chunks[pos].retrieval_text == c.retrieval_text
                chunks.append(c)
                tokens.append(old_tokens[pos] if same and pos is not None else bm25_terms(c.retrieval_text))
                vec_rows.append(old_vectors[pos] if same and pos is not None else None)
                if not same:
                    to_embed.append(len(chunks) - 1)
        else:
            for chunk_id in doc_infos[doc_id]["chunk_ids"]:
                pos = old_pos[chunk_id]
                chunks.append(old_chunks[pos])
                tokens.append(old_tokens[pos])
                vec_rows.append(old_vectors[pos])
    chunks = [
        c if c.superseded_by == doc_infos[c.doc_id]["superseded_by"]
        else Chunk.from_dict({**c.to_dict(), "superseded_by": doc_infos[c.doc_id]["superseded_by"]})
        for c in chunks
    ]

    embedder = get_embedder(config.embedding_model)
    dim = embedder.dim
    vectors = np.zeros((len(chunks), dim), dtype=np.float32)
    for i, row in enumerate(vec_rows):
        if row is not None and row.shape == (dim,):
            vectors[i] = row
        elif i not in to_embed:
            to_embed.append(i)
    to_embed.sort()
    cache = VectorCache(index_dir / CACHE_DIR / "vectors.sqlite")
    bar = _progress_bar(len(to_embed), progress)
    try:
        embedded, n_embedded = embed_passages_cached(
            embedder, [passage_input(chunks[i].retrieval_text) for i in to_embed], cache,
            progress=bar,
        )
    finally:
        if bar is not None:
            bar.close()
        cache.close()
    if to_embed:
        vectors[to_embed] = embedded
    report.chunks = len(chunks)
    report.chunks_embedded = n_embedded
    report.flagged = _screen_chunks(chunks, screen)

    # Chroma: delete what went away, upsert what is new (or everything if out of sync)
    new_ids = [c.chunk_id for c in chunks]
    new_set = set(new_ids)
    if in_sync:
        gone = [cid for cid in old_pos if cid not in new_set]
        fresh = [i for i, c in enumerate(chunks) if c.chunk_id not in old_pos]
        fresh_set = set(fresh)
        fresh.extend(i for i in to_embed if i not in fresh_set)
    else:
        logger.warning("Chroma collection %s out of sync (%d vectors, %d chunks): repairing",
                       store.name, stored, len(old_chunks))
        gone = [cid for cid in store.ids() if cid not in new_set]
        fresh = list(range(len(chunks)))
    store.delete(gone)
    store.upsert(
        [chunks[i].chunk_id for i in fresh],
        vectors[fresh] if fresh else np.zeros((0, dim), np.float32),
        [{"doc_id": chunks[i].doc_id, "kind": chunks[i].kind} for i in fresh],
    )

    new_manifest = {
        "settings": settings,
        "embedding_model": config.embedding_model,
        "dim": dim,
        "collection": store.name,
        "chroma_url": config.chroma_url,
        "index_id": index_id,
        "docs": doc_infos,
    }
    _save_index(index_dir, new_manifest, chunks, tokens, vectors)
    report.seconds = time.perf_counter() - started
    logger.info("%s", report.summary())
    return report
