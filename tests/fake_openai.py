"""A real local HTTP server speaking the OpenAI chat-completions API, for tests at the LLM boundary.

It binds 127.0.0.1 on a free port (stdlib ``http.server`` in a daemon thread) and answers
``POST /v1/chat/completions`` (plain JSON or ``stream: true`` server-sent events) and
``GET /v1/models``. Responses come from a script (a FIFO of :class:`Reply` / :class:`Fail` /
:class:`Slow` / :class:`RawBody` items) or from a ``responder`` callable that sees the request
and returns one of those. Every request body is recorded. When nothing is scripted the server fails
loudly: HTTP 500 ``fake_openai: script exhausted`` and the request is listed in ``server.errors``.

Structured output: langchain-openai 1.7's ``with_structured_output`` sends
``response_format={"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`` (the
reply's content is the JSON document) or, with ``method="function_calling"``, ``tools`` and
``tool_choice`` (the reply is a tool call). :func:`schema_name` tells which schema a request wants
so a responder can answer each LLM step of the graph correctly.

Example::

    with FakeOpenAIServer() as server:
        server.script(Reply(content="你好"), Fail(500))
        model = ChatOpenAI(base_url=server.url, api_key="k", model="fake", max_retries=0)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model"


@dataclass
class Reply:
    """A successful completion: text ``content`` and/or ``tool_calls`` ({"name", "args"})."""

    content: str | None = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    logprobs: list[tuple[str, float]] | None = None  # per-token; sent only when requested
    finish_reason: str | None = None
    delay: float = 0.0  # seconds to wait before answering


@dataclass
class Fail:
    """An HTTP error response in the OpenAI error shape."""

    status: int = 500
    message: str = "fake_openai: simulated server error"
    param: str | None = None


@dataclass
class Slow:
    """Sleep ``seconds`` before sending ``then`` (to exceed a client timeout)."""

    seconds: float
    then: Reply | Fail | None = None


@dataclass
class RawBody:
    """Send this exact body with HTTP 200 (e.g. a broken JSON document)."""

    body: str
    content_type: str = "application/json"


Item = Reply | Fail | Slow | RawBody
Responder = Callable[[dict[str, Any]], Item | None]


def schema_name(request: dict[str, Any]) -> str | None:
    """Return the structured-output schema a request asks for.

    That is the json_schema name, the forced tool's name, or for ``json_object`` requests the
    title of a JSON schema stated on its own line in a system message.
    """
    fmt = request.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return str((fmt.get("json_schema") or {}).get("name") or "") or None
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        return _schema_in_prompt(request)
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return str((choice.get("function") or {}).get("name") or "") or None
    tools = request.get("tools") or []
    if choice in ("required", "any") and len(tools) == 1:
        return str(tools[0]["function"]["name"])
    return None


def _schema_in_prompt(request: dict[str, Any]) -> str | None:
    """Return the title of a JSON schema written on its own line in a system message."""
    for message in request.get("messages", []):
        content = message.get("content")
        if message.get("role") != "system" or not isinstance(content, str):
            continue
        for line in content.splitlines():
            if not line.startswith("{"):
                continue
            try:
                schema = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(schema, dict) and "properties" in schema and schema.get("title"):
                return str(schema["title"])
    return None


def request_text(request: dict[str, Any]) -> str:
    """Return all message contents of a request joined by newlines (for matching prompts)."""
    parts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


def structured(request: dict[str, Any], data: dict[str, Any], **kwargs: Any) -> Reply:
    """Answer a structured-output request with ``data`` the way its method expects.

    A ``json_schema`` request gets the JSON as content; a function-calling request gets a tool call.
    """
    fmt = request.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
        return Reply(content=json.dumps(data, ensure_ascii=False), **kwargs)
    name = schema_name(request)
    if name is None:
        return Reply(content=json.dumps(data, ensure_ascii=False), **kwargs)
    return Reply(content=None, tool_calls=[{"name": name, "args": data}], **kwargs)


def dead_url() -> str:
    """Return a loopback ``/v1`` URL where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _completion(item: Reply, request: dict[str, Any], n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": item.content}
    if item.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)},
            }
            for i, c in enumerate(item.tool_calls)
        ]
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "finish_reason": item.finish_reason or ("tool_calls" if item.tool_calls else "stop"),
        "logprobs": _logprobs(item, request),
    }
    prompt_tokens = max(1, len(request_text(request)) // 2)
    completion_tokens = max(1, len(item.content or "") // 2)
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or MODEL,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _logprobs(item: Reply, request: dict[str, Any]) -> dict[str, Any] | None:
    if not request.get("logprobs"):
        return None
    tokens = item.logprobs
    if tokens is None:  # default: one near-certain token per character of the content
        tokens = [(ch, -0.001) for ch in (item.content or "")]
    return {
        "content": [
            {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
            for t, lp in tokens
        ]
    }


def _chunks(item: Reply, request: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Split a reply into streaming chunks (content in small pieces, then tool calls)."""
    base = {"id": f"chatcmpl-fake-{n}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": request.get("model") or MODEL}
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                              "finish_reason": None}]}
    ]
    text = item.content or ""
    for start in range(0, len(text), 4):
        piece = text[start:start + 4]
        lp = None
        if request.get("logprobs"):
            lp = {"content": [{"token": piece, "logprob": -0.001, "bytes": list(piece.encode()),
                               "top_logprobs": []}]}
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": piece},
                                            "logprobs": lp, "finish_reason": None}]})
    for i, call in enumerate(item.tool_calls):
        delta = {"tool_calls": [{"index": i, "id": f"call_{n}_{i}", "type": "function",
                                 "function": {"name": call["name"],
                                              "arguments": json.dumps(call["args"], ensure_ascii=False)}}]}
        chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    finish = item.finish_reason or ("tool_calls" if item.tool_calls else "stop")
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if (request.get("stream_options") or {}).get("include_usage"):
        usage = _completion(item, request, n)["usage"]
        chunks.append({**base, "choices": [], "usage": usage})
    return chunks


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on loopback; use as a context manager.

    Args:
        responder: Optional callable ``request -> item | None`` consulted when the script is empty.
        reject_logprobs: Answer 400 (``param: logprobs``) to any request that asks for logprobs,
            like servers that do not support them.
        reject_json_schema: Answer 400 (``param: response_format``) to ``json_schema`` response
            formats, like servers that only know ``json_object`` (DeepSeek's message).
    """

    def __init__(self, responder: Responder | None = None, *, reject_logprobs: bool = False,
                 reject_json_schema: bool = False):
        self.responder = responder
        self.reject_logprobs = reject_logprobs
        self.reject_json_schema = reject_json_schema
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._script: list[Item] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        """Bind a free loopback port and serve in a daemon thread."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return  # keep test output quiet

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [
                        {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    request = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._json(400, {"error": {"message": "request body is not JSON"}})
                    return
                server._handle(self, request)

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Return the base URL to give ChatOpenAI (``http://127.0.0.1:PORT/v1``)."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # scripting -------------------------------------------------------------------------------
    def script(self, *items: Item) -> FakeOpenAIServer:
        """Queue responses, served first-in first-out before the responder is consulted."""
        with self._lock:
            self._script.extend(items)
        return self

    @property
    def pending(self) -> int:
        """Return how many scripted items have not been served yet."""
        with self._lock:
            return len(self._script)

    def _next(self, request: dict[str, Any]) -> Item | None:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        return self.responder(request) if self.responder else None

    def _handle(self, handler: Any, request: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(request)
            n = len(self.requests)
        if self.reject_logprobs and request.get("logprobs"):
            self._send_error(handler, Fail(400, "logprobs are not supported by this server",
                                           param="logprobs"))
            return
        fmt = request.get("response_format")
        if self.reject_json_schema and isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            self._send_error(handler, Fail(400, "This response_format type is unavailable now",
                                           param="response_format"))
            return
        item = self._next(request)
        if item is None:
            self.errors.append(f"request {n}: script exhausted (schema={schema_name(request)})")
            self._send_error(handler, Fail(500, "fake_openai: script exhausted"))
            return
        if isinstance(item, Slow):
            time.sleep(item.seconds)
            item = item.then or Reply(content="(late)")
        if isinstance(item, Reply) and item.delay:
            time.sleep(item.delay)
        try:
            if isinstance(item, Fail):
                self._send_error(handler, item)
            elif isinstance(item, RawBody):
                self._send(handler, 200, item.body.encode(), item.content_type)
            elif request.get("stream"):
                self._send_stream(handler, _chunks(item, request, n))
            else:
                body = json.dumps(_completion(item, request, n), ensure_ascii=False).encode()
                self._send(handler, 200, body, "application/json")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer

    @staticmethod
    def _send(handler: Any, status: int, body: bytes, content_type: str) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _send_error(self, handler: Any, fail: Fail) -> None:
        kind = "invalid_request_error" if fail.status < 500 else "server_error"
        body = {"error": {"message": fail.message, "type": kind, "param": fail.param,
                          "code": None}}
        try:
            self._send(handler, fail.status, json.dumps(body).encode(), "application/json")
        except (BrokenPipeError, ConnectionResetError):
            pass

    @staticmethod
    def _send_stream(handler: Any, chunks: list[dict[str, Any]]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for chunk in chunks:
            handler.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
            handler.wfile.flush()
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
        handler.close_connection = True
