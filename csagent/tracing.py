"""Per-turn tracing: a local JSONL trace for every turn, plus Langfuse when its keys are set.

The API calls, for every turn::

    trace_id = new_trace_id()
    callbacks = callbacks_for_turn(user_id=..., thread_id=..., trace_id=trace_id)
    ... graph.stream(..., config={"callbacks": callbacks, ...}, stream_mode="updates") ...
    record = build_trace_record(trace_id=..., thread_id=..., user_id=..., question=...,
                                updates=[(node, update, latency_ms), ...], final_state=...)
    write_trace(settings.traces_dir, record)

Trace ids are 32 lowercase hex digits, so the same id is a valid OpenTelemetry / Langfuse trace
id: the local file ``<traces_dir>/<trace_id>.jsonl`` and the Langfuse trace share it.

Personal data is masked before anything is written or exported, by general patterns (no shop
data is loaded): mainland mobile numbers (``1[3-9]`` + 9 digits), Chinese street addresses
(province/city/district + road + number, or anything after an ``地址:`` label), names given
after a ``姓名/收货人/联系人`` label, in a self-introduction (「我是张伟」) or before a greeting or
title (「张伟您好」「王女士」) when they start with a common surname, every value of a name- or
address-like field of structured data (``name``, ``receiver``, ``address`` …) and those names
wherever else they occur in the same record, plus any names the app registers
(:func:`set_known_names`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from csagent.errors import UsageError

logger = logging.getLogger(__name__)

TRACE_VERSION = 1
_TRACE_ID_RE = re.compile(r"^[0-9A-Za-z_-]{4,64}$")

# --------------------------------------------------------------------------- masking

_PHONE_RE = re.compile(r"(?<![0-9])(1[3-9][0-9])[- ]?([0-9]{4})[- ]?([0-9]{4})(?![0-9])")
_HAN = "\u4e00-\u9fa5"
_NUM = "0-9０-９一二三四五六七八九十百零〇"
_ADMIN = (
    rf"(?:[{_HAN}]{{2,7}}?(?:省|自治区))?(?:[{_HAN}]{{2,7}}?市)?(?:[{_HAN}]{{1,7}}?(?:区|县|旗))?"
)
_STREET = (
    rf"[{_HAN}A-Za-z0-9]{{1,15}}?(?:路|街|大道|巷|胡同|村)\s*[{_NUM}]+\s*(?:号院|号|弄)"
    rf"(?:\s*[{_NUM}A-Za-z\-]*\s*(?:号楼|号院|院|栋|幢|座|楼|单元|层|室|号|弄))*(?:[{_NUM}]+室?)?"
)
_ADMIN_CHAIN = (
    rf"[{_HAN}]{{2,7}}?(?:省|自治区)[{_HAN}]{{2,7}}?市(?:[{_HAN}]{{1,7}}?(?:区|县))?"
    rf"|[{_HAN}]{{2,7}}?市[{_HAN}]{{1,7}}?(?:区|县)"
)
_ADDRESS_RE = re.compile(rf"(?:{_ADMIN}{_STREET})|(?:{_ADMIN_CHAIN})")
_ADDRESS_LABEL_RE = re.compile(r"((?:收货|收件|配送|家庭|联系|详细)?地址\s*[:：为是]\s*)([^\s，,。；;！!？?\"'}\]]+)")
_NAME_LABEL_RE = re.compile(rf"((?:姓名|收货人|收件人|联系人|客户)\s*[:：为是]\s*)([{_HAN}]{{2,4}})")
ADDRESS_MASK = "[地址]"

# The most common Chinese surnames (a general pattern for names in free text, not shop data).
_SURNAMES = ("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
             "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛"
             "郝龚邵万钱严覃武戴莫孔向汤")
_INTRO_NAME_RE = re.compile(
    rf"((?:我是|我叫|本人是?|我的名字是)\s*)([{_SURNAMES}][{_HAN}]{{1,2}})(?=[，,。.！!？?、\s]|$)")
_GREETED_NAME_RE = re.compile(
    rf"(?<![{_HAN}])([{_SURNAMES}][{_HAN}]{{1,2}}?)(?=\s*(?:您好|你好|先生|女士|小姐))")
# Structured fields whose values are personal: names, and addresses.
NAME_FIELDS = frozenset({"name", "real_name", "nickname", "receiver", "receiver_name", "contact_name",
                         "customer_name", "contact", "consignee"})
ADDRESS_FIELDS = frozenset({"address", "address_detail", "receiver_address", "shipping_address",
                            "detail"})
# A record's ``name`` is a person only where the record is about a person (not a product).
_PERSON_RECORD_KEYS = frozenset({"phone", "receiver_phone", "address", "user_id", "email"})

_known_names: list[str] = []
_names_lock = threading.Lock()


def set_known_names(names: Iterable[str] | None) -> None:
    """Register names that are always masked (the app's own customer list; None clears them)."""
    global _known_names
    with _names_lock:
        _known_names = sorted(set(names or []), key=len, reverse=True)


def _mask_name(name: str) -> str:
    return name[0] + "*" * (len(name) - 1)


def mask_text(text: str, extra_names: Iterable[str] = ()) -> str:
    """Mask phone numbers, Chinese addresses and customer names in ``text``.

    Args:
        text: Any string (a question, an answer, a tool result rendered as text).
        extra_names: Further names to mask (found in the same record's name fields).

    Returns:
        The string with ``13812345678`` → ``138****5678``, street addresses → ``[地址]`` and
        names → their surname plus ``*`` (``张三`` → ``张*``).

    """
    if not text:
        return text
    with _names_lock:
        names = sorted({*_known_names, *extra_names}, key=len, reverse=True)
    out = _PHONE_RE.sub(lambda m: f"{m.group(1)}****{m.group(3)}", text)
    out = _ADDRESS_LABEL_RE.sub(lambda m: m.group(1) + ADDRESS_MASK, out)
    out = _ADDRESS_RE.sub(ADDRESS_MASK, out)
    out = _NAME_LABEL_RE.sub(lambda m: m.group(1) + _mask_name(m.group(2)), out)
    out = _INTRO_NAME_RE.sub(lambda m: m.group(1) + _mask_name(m.group(2)), out)
    out = _GREETED_NAME_RE.sub(lambda m: _mask_name(m.group(1)), out)
    for name in names:
        if len(name) >= 2 and name in out:
            out = out.replace(name, _mask_name(name))
    return out


def _personal_values(data: Any, names: set[str], addresses: set[str]) -> None:
    """Collect the values of name- and address-like fields of person records in ``data``."""
    if isinstance(data, dict):
        person = bool(_PERSON_RECORD_KEYS & data.keys())
        for key, value in data.items():
            if isinstance(value, str) and len(value.strip()) >= 2:
                if key in NAME_FIELDS and (key != "name" or person):
                    names.add(value.strip())
                elif key in ADDRESS_FIELDS and len(value.strip()) >= 4:
                    addresses.add(value.strip())
            else:
                _personal_values(value, names, addresses)
    elif isinstance(data, list | tuple):
        for value in data:
            _personal_values(value, names, addresses)


def _mask_values(data: Any, names: frozenset[str], addresses: tuple[str, ...]) -> Any:
    if isinstance(data, str):
        for address in addresses:
            data = data.replace(address, ADDRESS_MASK)
        return mask_text(data, names)
    if isinstance(data, dict):  # keys too: a term-weight map is keyed by the customer's words
        return {(_mask_values(key, names, addresses) if isinstance(key, str) else key):
                _mask_values(value, names, addresses) for key, value in data.items()}
    if isinstance(data, list | tuple | set | frozenset):
        return [_mask_values(value, names, addresses) for value in data]
    return data


def mask_data(data: Any) -> Any:
    """Return a copy of ``data`` with every string masked, dictionary keys included.

    The values of name- and address-like fields of person records are masked wherever they
    occur in ``data`` (a receiver's name also inside a rendered sentence).
    """
    names: set[str] = set()
    addresses: set[str] = set()
    _personal_values(data, names, addresses)
    return _mask_values(data, frozenset(names), tuple(sorted(addresses, key=len, reverse=True)))


def mask_question_terms(data: Any, question: str) -> Any:
    """Return ``data`` with every string that is personal in ``question`` masked.

    Words cut out of the customer's message (the answerability gate's subject terms) stand
    alone, without the context that marks them as personal (「我是张伟」): a word of the
    question that :func:`mask_text` masks there is masked wherever it occurs in ``data``.
    """
    masked = mask_text(question or "")
    if masked == (question or ""):
        return data

    def personal(text: str) -> bool:
        return len(text) >= 2 and text in question and text not in masked

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _mask_name(value) if personal(value) else value
        if isinstance(value, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    return walk(data)


def _langfuse_mask(*, data: Any, **_: Any) -> Any:
    """Mask function handed to the Langfuse client (applied to span input/output/metadata)."""
    return mask_data(_jsonable(data))


# --------------------------------------------------------------------------- ids and Langfuse


def new_trace_id() -> str:
    """Return a fresh trace id: 32 lowercase hex digits (also a valid OpenTelemetry trace id)."""
    return uuid.uuid4().hex


def langfuse_enabled() -> bool:
    """Return True when Langfuse keys are set and tracing is not switched off."""
    if not (os.environ.get("LANGFUSE_PUBLIC_KEY") and os.environ.get("LANGFUSE_SECRET_KEY")):
        return False
    return os.environ.get("LANGFUSE_TRACING_ENABLED", "true").strip().lower() not in {"false", "0", "no"}


_client_lock = threading.Lock()


def init_langfuse(**kwargs: Any) -> Any:
    """Create the process's Langfuse client with csagent's masking, once; return it.

    Call this before any ``CallbackHandler`` exists if you need client options (tests pass
    ``span_exporter=InMemorySpanExporter()``); otherwise :func:`callbacks_for_turn` calls it.
    If a client already exists (created elsewhere), that one is returned unchanged.

    Args:
        **kwargs: Extra ``langfuse.Langfuse`` arguments.

    Returns:
        The ``langfuse.Langfuse`` client.

    """
    from langfuse import Langfuse, get_client
    from langfuse._client.resource_manager import LangfuseResourceManager

    with _client_lock:
        if LangfuseResourceManager._instances:
            return get_client()
        kwargs.setdefault("mask", _langfuse_mask)
        return Langfuse(**kwargs)


def _make_handler_class() -> type:
    from langfuse.langchain import CallbackHandler

    class TurnCallbackHandler(CallbackHandler):
        """A Langfuse handler that tags the turn's root run with session (thread) and user."""

        def __init__(self, *, user_id: str, thread_id: str, trace_id: str) -> None:
            super().__init__(trace_context={"trace_id": trace_id})
            self._turn_metadata = {
                "langfuse_session_id": thread_id,
                "langfuse_user_id": user_id,
                "csagent_trace_id": trace_id,
            }

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> Any:
            if kwargs.get("parent_run_id") is None:
                kwargs["metadata"] = {**(kwargs.get("metadata") or {}), **self._turn_metadata}
            return super().on_chain_start(serialized, inputs, **kwargs)

    return TurnCallbackHandler


def callbacks_for_turn(*, user_id: str, thread_id: str, trace_id: str) -> list[Any]:
    """Return the LangChain callbacks for one turn.

    With ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY`` set this is one Langfuse
    ``CallbackHandler`` whose trace id is ``trace_id``, whose session is the thread and whose
    user is ``user_id``; every graph node becomes a span with its input and output (masked).
    Without keys, or if Langfuse cannot be loaded, it is ``[]``.

    Args:
        user_id: The authenticated user.
        thread_id: The conversation thread (the Langfuse session).
        trace_id: From :func:`new_trace_id`.

    Returns:
        A list to pass as ``config["callbacks"]``.

    """
    if not langfuse_enabled():
        return []
    try:
        init_langfuse()
        handler_cls = _make_handler_class()
        return [handler_cls(user_id=user_id, thread_id=thread_id, trace_id=trace_id)]
    except Exception as exc:  # tracing must never break a turn
        logger.warning("Langfuse tracing disabled for this turn: %s", exc)
        return []


def _export_summary(record: dict[str, Any]) -> None:
    """Add a ``csagent.turn`` span carrying the (masked) trace record to the Langfuse trace."""
    try:
        from langfuse import propagate_attributes

        client = init_langfuse()
        with propagate_attributes(
            user_id=str(record.get("user_id") or "") or None,
            session_id=str(record.get("thread_id") or "") or None,
            trace_name="csagent.turn",
        ):
            span = client.start_observation(
                trace_context={"trace_id": record["trace_id"]},
                name="csagent.turn",
                as_type="span",
                input={"question": record.get("question")},
                output={"status": record.get("status"), "answer": record.get("answer")},
                metadata={k: v for k, v in record.items() if k not in {"question", "answer"}},
            )
            span.end()
    except Exception as exc:
        logger.warning("could not export the trace summary to Langfuse: %s", exc)


def flush() -> None:
    """Flush pending Langfuse spans (no-op without keys); call before a batch process exits."""
    if not langfuse_enabled():
        return
    try:
        init_langfuse().flush()
    except Exception as exc:
        logger.warning("Langfuse flush failed: %s", exc)


# --------------------------------------------------------------------------- trace records


def _jsonable(value: Any) -> Any:
    """Convert ``value`` to plain JSON types (messages and dataclasses become dicts/strings)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    content = getattr(value, "content", None)
    if content is not None and hasattr(value, "type"):
        return {"type": getattr(value, "type", ""), "content": _jsonable(content)}
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        try:
            return _jsonable(to_json())
        except Exception:  # noqa: BLE001 - fall back to repr below
            pass
    return repr(value)


def _score(scores: dict[str, Any], *names: str) -> float | None:
    for name in names:
        value = scores.get(name)
        if isinstance(value, int | float):
            return round(float(value), 6)
    return None


def _evidence_row(item: dict[str, Any]) -> dict[str, Any]:
    scores = item.get("scores") if isinstance(item.get("scores"), dict) else {}
    assert isinstance(scores, dict)
    return {
        "id": item.get("id"),
        "kind": item.get("kind"),
        "doc_id": item.get("doc_id"),
        "bm25": _score(scores, "bm25"),
        "dense": _score(scores, "dense", "vector", "cosine"),
        "fused": _score(scores, "fused", "hybrid"),
        "rerank": _score(scores, "rerank"),
        "score": _score(scores, "score"),
        "superseded": bool(item.get("superseded", False)),
        "conflict": bool(item.get("conflict", False)),
    }


def _context_digest(evidence: Sequence[dict[str, Any]]) -> str:
    sha = hashlib.sha256()
    for item in evidence:
        sha.update(str(item.get("id", "")).encode())
        sha.update(b"\x00")
        sha.update(str(item.get("text", "")).encode())
        sha.update(b"\x01")
    return "sha256:" + sha.hexdigest()[:16]


_BOUNDARY_KEYS = ("route", "confidence", "boundary_reason", "intent", "domain")


def _evidence_list(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, dict) and item.get("id") != "__reset__"]


def build_trace_record(
    *,
    trace_id: str,
    thread_id: str,
    user_id: str,
    question: str,
    updates: Sequence[tuple[str, Any, float]],
    final_state: dict[str, Any] | None,
) -> dict[str, Any]:
    """Build the JSON trace record of one turn from the graph's ``stream_mode="updates"``.

    Missing keys are tolerated everywhere: a turn that stopped at the boundary simply has no
    retrieval section. Nothing is masked here; :func:`write_trace` masks.

    Args:
        trace_id: The turn's trace id.
        thread_id: The conversation thread.
        user_id: The authenticated user.
        question: The user's message for this turn.
        updates: ``(node_name, update_dict, latency_ms)`` in execution order.
        final_state: The thread's state values after the turn (or None).

    Returns:
        A JSON-serialisable dict (see the README's trace format).

    """
    final = dict(final_state or {})
    boundary: dict[str, Any] = {}
    boundary_node: dict[str, Any] = {}  # what the boundary node itself decided wins
    queries: list[str] = []
    retrieved: list[dict[str, Any]] = []
    reranked: list[dict[str, Any]] = []
    context: list[dict[str, Any]] = []
    generations: list[dict[str, Any]] = []
    verifications: list[dict[str, Any]] = []
    feedback: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    latency: dict[str, float] = {}
    interrupt: Any = None
    merged: dict[str, Any] = {}

    for node, raw_update, latency_ms in updates:
        update = raw_update if isinstance(raw_update, dict) else {}
        if node == "__interrupt__" or "__interrupt__" in update:
            value = raw_update if node == "__interrupt__" else update.get("__interrupt__")
            interrupt = _interrupt_value(value)
        ms = round(float(latency_ms or 0.0), 3)
        steps.append({"node": node, "latency_ms": ms, "keys": sorted(map(str, update))})
        latency[node] = round(latency.get(node, 0.0) + ms, 3)
        merged.update({k: v for k, v in update.items() if k != "evidence"})
        fields = {k: _jsonable(update[k]) for k in _BOUNDARY_KEYS if k in update}
        if fields and "boundary" in node:
            boundary_node.update(fields)
        elif fields:
            boundary.update(fields)
        if isinstance(update.get("queries"), list):
            queries = [str(q) for q in update["queries"]]
        evidence = _evidence_list(update.get("evidence"))
        if evidence is not None:
            rows = [_evidence_row(item) for item in evidence]
            if any(row["rerank"] is not None for row in rows) or "rerank" in node:
                reranked = [{"id": r["id"], "score": r["rerank"] if r["rerank"] is not None
                             else r["score"]} for r in rows]
            elif not retrieved or "retriev" in node:
                retrieved = rows
            else:
                retrieved.extend(row for row in rows if row not in retrieved)
            context = evidence
        if isinstance(update.get("tool_calls"), list):
            tool_calls = [_jsonable(call) for call in update["tool_calls"]]
        draft = update.get("draft")
        if isinstance(draft, str) and draft:
            generation: dict[str, Any] = {"node": node, "text": draft}
            if isinstance(update.get("gate"), dict):
                generation["gate"] = mask_question_terms(_jsonable(update["gate"]), question)
            generations.append(generation)
        if isinstance(update.get("verification"), dict):
            verifications.append(_jsonable(update["verification"]))
        if isinstance(update.get("feedback"), list):
            feedback.extend(str(f) for f in update["feedback"])

    if boundary_node:
        boundary = boundary_node
    if interrupt is None and isinstance(final.get("interrupt"), dict):
        interrupt = final["interrupt"]
    final_evidence = _evidence_list(final.get("evidence"))
    if final_evidence:
        context = final_evidence
    if not retrieved and context:
        retrieved = [_evidence_row(item) for item in context]
    state = {**merged, **final}
    verification = state.get("verification") if isinstance(state.get("verification"), dict) else None
    if verification is None and verifications:
        verification = verifications[-1]
    reflections = state.get("reflections")
    status = state.get("status") or ("needs_confirmation" if _is_confirm(interrupt) else None)
    if status is None and interrupt is not None:
        status = "handoff"
    return {
        "version": TRACE_VERSION,
        "trace_id": trace_id,
        "thread_id": thread_id,
        "user_id": user_id,
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "question": question,
        "boundary": boundary,
        "queries": queries,
        "retrieval": retrieved,
        "rerank": reranked,
        "tool_calls": tool_calls,
        "context": {"ids": [str(item.get("id")) for item in context], "digest": _context_digest(context)},
        "generations": generations,
        "verification": _jsonable(verification),
        "verification_rounds": verifications,
        "reflections": {
            "count": int(reflections)
            if isinstance(reflections, int | float)
            else max(0, len(verifications) - 1),
            "feedback": feedback,
        },
        "status": status,
        "answer": _jsonable(state.get("answer")),
        "citations": _jsonable(state.get("citations") or []),
        "fail_reason": state.get("fail_reason"),
        "interrupt": _jsonable(interrupt),
        "steps": steps,
        "latency_ms": latency,
        "total_latency_ms": round(sum(step["latency_ms"] for step in steps), 3),
    }


def _interrupt_value(value: Any) -> Any:
    if isinstance(value, list | tuple) and value:
        value = value[0]
    return getattr(value, "value", value)


def _is_confirm(interrupt: Any) -> bool:
    return isinstance(interrupt, dict) and interrupt.get("type") == "confirm"


def _check_trace_id(trace_id: str) -> str:
    if not isinstance(trace_id, str) or not _TRACE_ID_RE.match(trace_id):
        raise UsageError(f"invalid trace id {trace_id!r}: expected letters, digits, '-' or '_'")
    return trace_id


def write_trace(traces_dir: Path | str, record: dict[str, Any]) -> Path:
    """Write one turn's trace as ``<traces_dir>/<trace_id>.jsonl``, masked, atomically.

    The record is masked (:func:`mask_data`), written to a temporary file in the same folder,
    fsynced and renamed into place, so a reader never sees a half-written trace. When Langfuse
    is enabled the masked record is also attached to the Langfuse trace as a ``csagent.turn``
    span.

    Args:
        traces_dir: The folder of traces (``Settings.traces_dir``); created if missing.
        record: From :func:`build_trace_record`.

    Returns:
        The path written.

    """
    trace_id = _check_trace_id(str(record.get("trace_id", "")))
    folder = Path(traces_dir)
    folder.mkdir(parents=True, exist_ok=True)
    masked = mask_data(_jsonable(record))
    line = json.dumps(masked, ensure_ascii=False, separators=(",", ":")) + "\n"
    path = folder / f"{trace_id}.jsonl"
    fd, tmp = tempfile.mkstemp(prefix=f".{trace_id}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if langfuse_enabled():
        _export_summary(masked)
    return path


def read_trace(traces_dir: Path | str, trace_id: str) -> dict[str, Any]:
    """Read one trace by id or by a unique id prefix (at least 4 characters).

    Args:
        traces_dir: The folder of traces.
        trace_id: A full trace id or a unique prefix.

    Returns:
        The trace record.

    Raises:
        UsageError: The id is malformed, unknown, ambiguous, or the file is unreadable.

    """
    _check_trace_id(trace_id)
    folder = Path(traces_dir)
    path = folder / f"{trace_id}.jsonl"
    if not path.is_file():
        matches = sorted(folder.glob(f"{trace_id}*.jsonl")) if folder.is_dir() else []
        if not matches:
            raise UsageError(f"no trace {trace_id!r} in {folder}")
        if len(matches) > 1:
            shown = ", ".join(m.stem for m in matches[:5])
            raise UsageError(f"trace id prefix {trace_id!r} is ambiguous: {shown}")
        path = matches[0]
    try:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        record = json.loads(first)
    except (OSError, IndexError, json.JSONDecodeError) as exc:
        raise UsageError(f"trace file {path} is unreadable: {exc}") from exc
    if not isinstance(record, dict):
        raise UsageError(f"trace file {path} does not hold a JSON object")
    return record


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _gate_lines(gate: dict[str, Any]) -> list[str]:
    """Return the answerability gate's decision as indented lines (see ``gate_summary``)."""
    quals = json.dumps(gate.get("qualifiers") or {}, ensure_ascii=False)
    lines = [f"  [gate] slot={gate.get('slot')} subject={'/'.join(gate.get('subject') or []) or '-'}"
             f" anchors={'/'.join(gate.get('anchors') or []) or '-'} qualifiers={quals}"
             f" answerable={gate.get('answerable')}"
             + (f" reason={gate['reason']}" if gate.get("reason") else "")]
    for unit in gate.get("units") or []:
        if not isinstance(unit, dict):
            continue
        conflicts = unit.get("conflicts") or {}
        lines.append(f"    {'+' if unit.get('answers') else '-'} {unit.get('id')}  {unit.get('reason')}"
                     f"  found={'/'.join(unit.get('found') or []) or '-'}"
                     f"  missing={'/'.join(unit.get('missing') or []) or '-'}"
                     + (f"  conflicts={json.dumps(conflicts, ensure_ascii=False)}" if conflicts else ""))
    return lines


def render_trace(record: dict[str, Any]) -> str:
    """Render a trace record as readable text (what ``csagent trace ID`` prints).

    Args:
        record: A trace record (from :func:`read_trace`).

    Returns:
        Multi-line text ending with a newline.

    """
    out: list[str] = []
    add = out.append
    add(f"trace {record.get('trace_id')}  ({record.get('timestamp', '')})")
    add(f"thread {record.get('thread_id')}  user {record.get('user_id')}")
    add(f"question: {record.get('question')}")
    b = record.get("boundary") or {}
    add(f"\n[boundary] route={_fmt(b.get('route'))} confidence={_fmt(b.get('confidence'))}"
        + (f" reason={b['boundary_reason']}" if b.get("boundary_reason") else ""))
    if record.get("queries"):
        add("[rewrite] " + " | ".join(record["queries"]))
    if record.get("tool_calls"):
        add("[tools]")
        for call in record["tool_calls"]:
            if isinstance(call, dict):
                result = call.get("result") if isinstance(call.get("result"), dict) else {}
                assert isinstance(result, dict)
                add(f"  {call.get('name')}({json.dumps(call.get('args'), ensure_ascii=False)})"
                    f" -> code={result.get('code')} {result.get('message', '')}")
    if record.get("retrieval"):
        add("[retrieval]  id  bm25  dense  fused")
        for row in record["retrieval"]:
            add(f"  {row.get('id')}  {_fmt(row.get('bm25'))}  {_fmt(row.get('dense'))}"
                f"  {_fmt(row.get('fused'))}" + ("  (superseded)" if row.get("superseded") else ""))
    if record.get("rerank"):
        add("[rerank]")
        for row in record["rerank"]:
            add(f"  {row.get('id')}  {_fmt(row.get('score'))}")
    ctx = record.get("context") or {}
    if ctx.get("ids"):
        add(f"[context] {', '.join(ctx['ids'])}  digest={ctx.get('digest')}")
    for i, gen in enumerate(record.get("generations") or [], 1):
        add(f"[generation {i}] {gen.get('text') if isinstance(gen, dict) else gen}")
        if isinstance(gen, dict) and isinstance(gen.get("gate"), dict):
            out.extend(_gate_lines(gen["gate"]))
    ver = record.get("verification")
    if isinstance(ver, dict):
        add(f"[verification] overall={ver.get('overall')}")
        for claim in ver.get("claims") or []:
            ids = ",".join(claim.get("evidence_ids") or [])
            add(f"  - {claim.get('status')}: {claim.get('claim')}  [{ids}]"
                + (f"  ({claim['reason']})" if claim.get("reason") else ""))
    refl = record.get("reflections") or {}
    if refl.get("count") or refl.get("feedback"):
        add(f"[reflections] {refl.get('count')}")
        for item in refl.get("feedback") or []:
            add(f"  - {item}")
    if record.get("interrupt") is not None:
        add(f"[interrupt] {json.dumps(record['interrupt'], ensure_ascii=False)[:300]}")
    add(f"\nstatus: {record.get('status')}   fail_reason: {_fmt(record.get('fail_reason'))}")
    add(f"answer: {record.get('answer') or ''}")
    if record.get("citations"):
        add("citations: " + ", ".join(str(c.get("id")) if isinstance(c, dict) else str(c)
                                      for c in record["citations"]))
    latency = record.get("latency_ms") or {}
    if latency:
        add("latency (ms): " + "  ".join(f"{k}={v:.1f}" for k, v in latency.items())
            + f"  total={_fmt(record.get('total_latency_ms'))}")
    return "\n".join(out) + "\n"


def now_ms() -> float:
    """Return a monotonic clock in milliseconds (for timing nodes)."""
    return time.perf_counter() * 1000.0
