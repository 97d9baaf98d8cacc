"""Load documents from .md/.txt files (with optional YAML front matter) and .jsonl files.

Bad input never stops a load: an empty or binary file, broken front matter, or a .jsonl line
that is not JSON or lacks ``text`` is reported as a :class:`Skipped` (file, line, reason) and the
rest is loaded.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

logger = logging.getLogger(__name__)

SUFFIXES = (".md", ".markdown", ".txt", ".jsonl")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")
_KNOWN_FIELDS = ("id", "title", "version", "effective_date", "supersedes", "status", "category", "tags")


@dataclass(frozen=True, kw_only=True)
class Document:
    """One source document before chunking."""

    doc_id: str
    title: str
    text: str
    source: str
    version: str = ""
    effective_date: str = ""
    supersedes: str | None = None
    status: str = "current"
    markdown: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        """Return a hash of everything that affects the chunks (text, title, metadata)."""
        payload = json.dumps(
            [self.doc_id, self.title, self.text, self.version, self.effective_date,
             self.supersedes, self.status, self.markdown, self.metadata],
            ensure_ascii=False, sort_keys=True, default=str,
        )
        return hashlib.sha1(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Skipped:
    """A file or line that could not be loaded."""

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.reason}"


def iter_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Skipped]]:
    """Expand files and folders (recursively) into the supported files, sorted.

    Returns:
        The files to load and the paths that do not exist or have an unsupported suffix.

    """
    files: list[Path] = []
    skipped: list[Skipped] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                p for p in sorted(path.rglob("*"))
                if p.is_file() and p.suffix.lower() in SUFFIXES and not p.name.startswith(".")
            )
        elif path.is_file():
            if path.suffix.lower() in SUFFIXES:
                files.append(path)
            else:
                skipped.append(Skipped(str(path), None, f"unsupported file type {path.suffix!r}"))
        else:
            skipped.append(Skipped(str(path), None, "no such file or folder"))
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, skipped


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    if not data.strip():
        raise ValueError("empty file")
    if b"\x00" in data[:8192]:
        raise ValueError("binary file (NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _clean_id(value: Any, path: Path, line: int | None) -> str:
    doc_id = str(value).strip()
    if not _ID_RE.match(doc_id):
        raise _LineError(line, f"bad document id {doc_id!r} (letters, digits, . _ -; at most 128)")
    return doc_id


class _LineError(ValueError):
    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str, int]:
    """Split YAML front matter (``---`` fenced at the top) from the body.

    Returns:
        (front matter dict or None when absent, body, line number where the body starts).

    Raises:
        _LineError: the front matter is not closed, not YAML, or not a mapping.

    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None, text, 1
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            raw = "\n".join(lines[1:i])
            try:
                meta = yaml.safe_load(raw) if raw.strip() else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = (mark.line + 2) if mark is not None else 1
                raise _LineError(line, f"broken front matter: {getattr(exc, 'problem', exc)}") from exc
            if not isinstance(meta, dict):
                raise _LineError(1, "broken front matter: not a key: value mapping")
            return meta, "\n".join(lines[i + 1:]), i + 2
    raise _LineError(1, "broken front matter: no closing '---'")


def _doc_from_meta(
    meta: dict[str, Any], *, body: str, path: Path, default_id: str | None, markdown: bool,
    line: int | None = None,
) -> Document:
    raw_id = meta.get("id", default_id)
    if raw_id in (None, ""):
        raise _LineError(line or 1, "front matter has no 'id'")
    doc_id = _clean_id(raw_id, path, line)
    if not body.strip():
        raise _LineError(line, "document has no text")
    title = str(meta.get("title") or "").strip()
    if not title:
        title = _first_heading(body) or doc_id
    extra = {k: v for k, v in meta.items() if k not in ("id", "title", "version", "effective_date",
                                                        "supersedes", "status", "text", "metadata")}
    if isinstance(meta.get("metadata"), dict):
        extra.update(meta["metadata"])
    status = str(meta.get("status") or "current").strip()
    supersedes = meta.get("supersedes")
    return Document(
        doc_id=doc_id,
        title=title,
        text=body,
        source=str(path),
        version=str(meta.get("version") or ""),
        effective_date=str(meta.get("effective_date") or ""),
        supersedes=str(supersedes).strip() if supersedes else None,
        status=status,
        markdown=markdown,
        metadata=json.loads(json.dumps(extra, ensure_ascii=False, default=str)),
    )


def _first_heading(body: str) -> str | None:
    for line in body.split("\n"):
        m = re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1).strip()
    return None


def load_file(path: Path) -> tuple[list[Document], list[Skipped]]:
    """Load one file; return its documents and what was skipped (with file and line)."""
    try:
        text = _read_text(path)
    except (OSError, ValueError) as exc:
        return [], [Skipped(str(path), None, str(exc))]
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _load_jsonl(path, text)
    markdown = suffix in (".md", ".markdown")
    try:
        meta, body, body_line = split_front_matter(text)
        if meta is None:
            meta = {}  # plain Markdown/text: id from the file name, title from the first heading
        doc = _doc_from_meta(meta, body=body, path=path, default_id=path.stem,
                             markdown=markdown, line=body_line)
    except _LineError as exc:
        return [], [Skipped(str(path), exc.line, exc.reason)]
    return [doc], []


def _load_jsonl(path: Path, text: str) -> tuple[list[Document], list[Skipped]]:
    docs: list[Document] = []
    skipped: list[Skipped] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except json.JSONDecodeError as exc:
            skipped.append(Skipped(str(path), lineno, f"not JSON: {exc.msg}"))
            continue
        except RecursionError:
            skipped.append(Skipped(str(path), lineno, "not JSON: nested too deeply"))
            continue
        except UnicodeEncodeError:
            skipped.append(Skipped(str(path), lineno, "text with a lone surrogate (\\ud800-\\udfff)"))
            continue
        if not isinstance(obj, dict):
            skipped.append(Skipped(str(path), lineno, "not a JSON object"))
            continue
        if not isinstance(obj.get("text"), str) or not obj["text"].strip():
            skipped.append(Skipped(str(path), lineno, "missing or empty 'text'"))
            continue
        if obj.get("metadata") is not None and not isinstance(obj["metadata"], dict):
            skipped.append(Skipped(str(path), lineno, "'metadata' must be an object"))
            continue
        meta = dict(obj.get("metadata") or {})
        meta.update({k: obj[k] for k in ("id", "title") if k in obj})
        try:
            docs.append(_doc_from_meta(meta, body=obj["text"], path=path,
                                       default_id=None, markdown=True, line=lineno))
        except _LineError as exc:
            skipped.append(Skipped(str(path), lineno, exc.reason))
    return docs, skipped


def load_documents(paths: Iterable[str | Path]) -> tuple[list[Document], list[Skipped]]:
    """Load every supported file under ``paths``.

    A document id seen twice keeps the first occurrence; the duplicate is reported as skipped.
    """
    files, skipped = iter_files(paths)
    docs: list[Document] = []
    seen: dict[str, str] = {}
    for path in files:
        file_docs, file_skipped = load_file(path)
        skipped.extend(file_skipped)
        for doc in file_docs:
            if doc.doc_id in seen:
                skipped.append(Skipped(doc.source, None,
                                       f"duplicate document id {doc.doc_id!r} (first in {seen[doc.doc_id]})"))
                continue
            seen[doc.doc_id] = doc.source
            docs.append(doc)
    for item in skipped:
        logger.info("skipped %s", item)
    return docs, skipped
