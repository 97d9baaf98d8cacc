"""Split documents into chunks that keep meaning whole.

Order of splitting: headings first (each section under its heading path), then every Markdown
table becomes its own chunk (tables are split into row groups of at most ``TABLE_CHARS``
characters of row text, the header repeated), then text
longer than ``chunk_size`` characters is split at sentence boundaries with ``chunk_overlap``
characters of overlap. A table chunk's ``retrieval_text`` starts with a one-line summary
(document title, heading path, column headers, row count) followed by the rows written as
「列名: 值」 pairs, so both BM25 and the embedder see each cell next to its column name.

Chunk ids are ``{doc_id}#{first 8 hex of sha1(doc_id + heading path + text)}``: stable across
re-ingests of the same content.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from knowledge.loaders import Document
from knowledge.types import Chunk, ChunkKind

_HEADING_RE = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
# a table group's rows (as 「列名: 值」 text) stay within this many characters, so the group's
# whole retrieval text fits the passage window the embedder sees (knowledge.embeddings)
TABLE_CHARS = 180
_SENTENCE_RE = re.compile(r"[^。！？!?；;\n]*(?:[。！？!?；;]+|\n|$)")


def make_chunk_id(doc_id: str, heading_path: tuple[str, ...], text: str) -> str:
    """Return the stable chunk id for ``text`` under ``heading_path`` of ``doc_id``."""
    digest = hashlib.sha1(
        (doc_id + "\n" + " > ".join(heading_path) + "\n" + text).encode("utf-8")
    ).hexdigest()
    return f"{doc_id}#{digest[:8]}"


@dataclass
class _Block:
    heading_path: tuple[str, ...]
    kind: ChunkKind
    lines: list[str]


def _is_table_row(line: str) -> bool:
    s = line.strip()
    return s.startswith("|") and s.count("|") >= 2


def _split_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", s)]


def _blocks(text: str, markdown: bool) -> list[_Block]:
    """Group the body into text and table blocks, each under its heading path."""
    lines = text.split("\n")
    blocks: list[_Block] = []
    stack: list[tuple[int, str]] = []
    current: _Block | None = None
    in_fence = False
    i = 0

    def path() -> tuple[str, ...]:
        return tuple(title for _, title in stack)

    while i < len(lines):
        line = lines[i]
        if markdown and _FENCE_RE.match(line):
            in_fence = not in_fence
        if markdown and not in_fence:
            m = _HEADING_RE.match(line)
            if m:
                level, title = len(m.group(1)), m.group(2).strip()
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, title))
                current = None
                i += 1
                continue
            if (_is_table_row(line) and i + 1 < len(lines) and _TABLE_SEP_RE.match(lines[i + 1])):
                table = [line, lines[i + 1]]
                i += 2
                while i < len(lines) and _is_table_row(lines[i]):
                    table.append(lines[i])
                    i += 1
                blocks.append(_Block(path(), "table", table))
                current = None
                continue
        if current is None or current.kind != "text":
            current = _Block(path(), "text", [])
            blocks.append(current)
        current.lines.append(line)
        i += 1
    return [b for b in blocks if any(line.strip() for line in b.lines)]


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_RE.findall(text) if s]


def split_text(text: str, chunk_size: int, overlap: int) -> list[str]:
    """Split ``text`` into pieces of at most ``chunk_size`` characters with ``overlap``.

    Pieces end at sentence boundaries where possible; a sentence longer than ``chunk_size`` is
    cut by a sliding window. Each piece after the first starts with up to ``overlap``
    characters taken from the end of the previous piece (whole sentences when they fit).
    """
    text = text.strip()
    if len(text) <= chunk_size:
        return [text] if text else []
    units: list[str] = []
    step = chunk_size - overlap
    for sent in _sentences(text):
        if len(sent) <= chunk_size:
            units.append(sent)
        else:
            units.extend(sent[j:j + chunk_size] for j in range(0, max(len(sent) - overlap, 1), step))
    pieces: list[str] = []
    buf: list[str] = []
    size = 0
    for unit in units:
        if buf and size + len(unit) > chunk_size:
            piece = "".join(buf).strip()
            if piece:
                pieces.append(piece)
            tail: list[str] = []
            tail_size = 0
            for prev in reversed(buf):
                if tail_size + len(prev) > overlap:
                    break
                tail.insert(0, prev)
                tail_size += len(prev)
            if not tail and overlap:
                tail = [buf[-1][-overlap:]]
                tail_size = len(tail[0])
            if tail_size + len(unit) > chunk_size:
                tail, tail_size = [], 0
            buf, size = tail, tail_size
        buf.append(unit)
        size += len(unit)
    piece = "".join(buf).strip()
    if piece and (not pieces or piece not in pieces[-1]):
        pieces.append(piece)
    return pieces


def _table_chunks(
    block: _Block, where: str, chunk_size: int, table_chars: int
) -> list[tuple[str, str]]:
    """Return (text, retrieval_text) pairs for one table, split into row groups.

    A group ends when its Markdown would pass ``chunk_size`` or its 「列名: 值」 rows would pass
    ``table_chars`` (so the whole group fits the embedder's passage window); every group repeats
    the header.
    """
    header = _split_row(block.lines[0])
    head_md = block.lines[:2]
    head_size = sum(len(x) + 1 for x in head_md)
    facts = []
    for line in block.lines[2:]:
        pairs = [f"{h}: {c}" for h, c in zip(header, _split_row(line), strict=False) if c]
        facts.append("；".join(pairs) + "。")
    groups: list[list[int]] = [[]]
    md_size, fact_size = head_size, 0
    for idx, line in enumerate(block.lines[2:]):
        if groups[-1] and (md_size + len(line) > chunk_size
                           or fact_size + len(facts[idx]) > table_chars):
            groups.append([])
            md_size, fact_size = head_size, 0
        groups[-1].append(idx)
        md_size += len(line) + 1
        fact_size += len(facts[idx]) + 1
    out = []
    for n, group in enumerate(groups, start=1):
        text = "\n".join(head_md + [block.lines[2 + i] for i in group])
        part = f"（第{n}/{len(groups)}部分）" if len(groups) > 1 else ""
        summary = (
            f"表格：{where}{part}，列：{'、'.join(h for h in header if h)}，共{len(group)}行。"
        )
        out.append((text, summary + "\n" + "\n".join(facts[i] for i in group)))
    return out


def chunk_document(
    doc: Document,
    *,
    chunk_size: int = 512,
    chunk_overlap: int = 64,
    table_chars: int = TABLE_CHARS,
) -> list[Chunk]:
    """Split ``doc`` into chunks (headings → tables → size with overlap).

    Args:
        doc: the loaded document.
        chunk_size: maximum characters of a text chunk (tables: of each row group).
        chunk_overlap: overlap in characters between consecutive pieces of a long section.
        table_chars: maximum characters of a table group's 「列名: 值」 rows (see module doc).

    Returns:
        The chunks in document order, with stable ids and duplicate texts dropped.

    """
    chunks: list[Chunk] = []
    seen: set[str] = set()
    base_meta = {"status": doc.status}
    for key in ("category", "tags"):
        if key in doc.metadata:
            base_meta[key] = doc.metadata[key]
    for block in _blocks(doc.text, doc.markdown):
        hp = block.heading_path
        if hp and hp[0] == doc.title:
            where = " > ".join(hp)
        else:
            where = " > ".join((doc.title, *hp))
        if block.kind == "table":
            pairs = _table_chunks(block, where, chunk_size, table_chars)
        else:
            body = "\n".join(block.lines).strip()
            pairs = [(piece, f"{where}\n{piece}") for piece in split_text(body, chunk_size, chunk_overlap)]
        for text, retrieval_text in pairs:
            chunk_id = make_chunk_id(doc.doc_id, hp, text)
            if chunk_id in seen:
                continue
            seen.add(chunk_id)
            chunks.append(
                Chunk(
                    chunk_id=chunk_id,
                    doc_id=doc.doc_id,
                    title=doc.title,
                    text=text,
                    retrieval_text=retrieval_text,
                    heading_path=hp,
                    kind=block.kind,
                    source=doc.source,
                    version=doc.version,
                    effective_date=doc.effective_date,
                    metadata=dict(base_meta),
                )
            )
    return chunks
