"""``csagent serve`` as a real subprocess on a loopback port (SQLite default backend).

Customer turns as JSON and as SSE, the bad-input table of issue 11, a client that drops its SSE
stream mid-turn, a double-clicked confirmation over HTTP, the desk's API flow, and the OpenAPI
schema fuzzed with schemathesis.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import time
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from csagent.locks import FileThreadLocks
from tests.integration.service_support import (
    AGENT2_TOKEN,
    AGENT_TOKEN,
    CUSTOMER,
    HANDOFF_Q,
    POLICY_Q,
    REFUND_ORDER,
    REFUND_Q,
    Service,
    auth,
    confirm,
    parse_sse,
    send,
    shared_index,
    shop_tickets,
    stream_turn,
)

pytestmark = pytest.mark.integration
U1, U2 = CUSTOMER["u1001"], CUSTOMER["u1002"]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    index = shared_index(tmp_path_factory)
    svc = Service(data_dir=tmp_path_factory.mktemp("svc-data"), index_dir=index).start()
    yield svc
    svc.stop()


def test_a_json_turn_is_answered_with_citations(service: Service):
    resp = send(service.url, U1, "j-1", POLICY_Q)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "answered" and body["answered_by"] == "agent"
    assert body["citations"] and "【来源:returns-7day#" in body["answer"]


def test_an_sse_turn_streams_progress_then_only_the_verified_result(service: Service):
    events = stream_turn(service.url, U1, "s-1", POLICY_Q)
    kinds = [e for e, _, _ in events]
    assert kinds[0] == "accepted" and kinds[-1] == "result"
    assert set(kinds[1:-1]) == {"progress"} and len(kinds) >= 5
    for _, data, _ in events[1:-1]:
        assert set(data) == {"node", "label"}  # no draft, no answer text before verification
    result = events[-1][1]
    assert result["status"] == "answered" and result["verification"]["overall"] == "pass"
    assert result["answer"] not in json.dumps([d for _, d, _ in events[:-1]], ensure_ascii=False)
    assert events[0][2] < events[-1][2]


def test_bad_input_gets_a_defined_status_and_a_json_error(service: Service):
    url = service.url
    assert send(url, U1, "owned-by-1", POLICY_Q).status_code == 200
    cases = [
        (httpx.get(f"{url}/v1/threads/never-seen/history", headers=auth(U1)), 404,
         "unknown_thread"),
        (httpx.get(f"{url}/v1/threads/owned-by-1/history", headers=auth(U2)), 403,
         "foreign_thread"),
        (send(url, U2, "owned-by-1", POLICY_Q), 403, "foreign_thread"),
        (confirm(url, U1, "owned-by-1"), 409, "nothing_pending"),
        (confirm(url, U1, "never-seen"), 404, "unknown_thread"),
        (httpx.post(f"{url}/v1/threads/t/messages", content=b"{not json",
                    headers=auth(U1) | {"content-type": "application/json"}), 422, "bad_input"),
        (httpx.post(f"{url}/v1/threads/t/messages", json={"message": ""}, headers=auth(U1)),
         422, "bad_input"),
        (httpx.post(f"{url}/v1/threads/t/messages", json={"message": "   "}, headers=auth(U1)),
         422, "bad_input"),
        (httpx.post(f"{url}/v1/threads/t/messages", json={"message": "x" * 4001},
                    headers=auth(U1)), 422, "bad_input"),
        (httpx.post(f"{url}/v1/threads/t/messages", json={"message": "hi", "user_id": "u1002"},
                    headers=auth(U1)), 422, "bad_input"),
        (httpx.post(f"{url}/v1/threads/t/messages", content=b"x" * 70_000,
                    headers=auth(U1) | {"content-type": "application/json"}), 413,
         "body_too_large"),
        (httpx.post(f"{url}/v1/threads/bad%20id/messages", json={"message": "hi"},
                    headers=auth(U1)), 422, "bad_input"),
        (httpx.post(f"{url}/v1/threads/t/messages", json={"message": "hi"}), 401,
         "unauthenticated"),
        (httpx.post(f"{url}/v1/threads/t/messages", json={"message": "hi"},
                    headers=auth("not-a-token")), 401, "unauthenticated"),
        (httpx.post(f"{url}/v1/threads/t/messages", json={"message": "hi"},
                    headers=auth(AGENT_TOKEN)), 403, "forbidden"),
        (httpx.get(f"{url}/v1/desk/handoffs", headers=auth(U1)), 403, "forbidden"),
        (httpx.post(f"{url}/v1/desk/handoffs/999999/reply", json={"text": "hi"},
                    headers=auth(AGENT_TOKEN)), 404, "unknown_handoff"),
    ]
    for resp, status, code in cases:
        assert resp.status_code == status, (resp.request.url, resp.text)
        assert resp.json()["error"]["code"] == code, resp.text
    # the stored state is untouched by all of that
    history = httpx.get(f"{url}/v1/threads/owned-by-1/history", headers=auth(U1)).json()
    assert [e["type"] for e in history["events"]] == ["message", "reply"]


def test_a_dropped_sse_client_does_not_cancel_or_corrupt_the_turn(service: Service):
    headers = auth(U1) | {"Accept": "text/event-stream"}
    with httpx.stream("POST", f"{service.url}/v1/threads/drop-1/messages",
                      json={"message": POLICY_Q}, headers=headers, timeout=60) as resp:
        first = next(parse_sse(resp.iter_lines()))
        assert first[0] == "accepted"
    # the client is gone; the turn finishes anyway and lands in the history once
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        history = httpx.get(f"{service.url}/v1/threads/drop-1/history", headers=auth(U1))
        assert history.status_code == 200, history.text  # the thread is the customer's already
        events = history.json()
        if len(events["events"]) >= 2:
            break
        time.sleep(0.2)
    assert [(e["type"], e["status"]) for e in events["events"]] == [
        ("message", None), ("reply", "answered")]
    again = send(service.url, U1, "drop-1", POLICY_Q)
    assert again.status_code == 200 and again.json()["status"] == "answered"


def test_a_new_thread_is_the_customers_from_accepted_even_while_its_run_waits(service: Service):
    thread = "early-1"
    with httpx.Client(timeout=60) as client, contextlib.ExitStack() as lock:
        # another holder of the thread's lock keeps the run from starting
        lock.enter_context(FileThreadLocks(service.data_dir / "locks").hold(thread))
        with client.stream("POST", f"{service.url}/v1/threads/{thread}/messages",
                           json={"message": POLICY_Q},
                           headers=auth(U1) | {"Accept": "text/event-stream"}) as resp:
            events = parse_sse(resp.iter_lines())
            assert next(events)[0] == "accepted"
            history = client.get(f"{service.url}/v1/threads/{thread}/history", headers=auth(U1))
            assert history.status_code == 200, history.text
            assert history.json()["events"] == []
            other = client.get(f"{service.url}/v1/threads/{thread}/history", headers=auth(U2))
            assert other.status_code == 403 and other.json()["error"]["code"] == "foreign_thread"
            lock.close()  # the run goes on
            rest = list(events)
    assert rest[-1][0] == "result" and rest[-1][1]["status"] == "answered", rest[-1]


def test_an_sse_turn_with_a_blank_message_is_refused_before_it_starts(service: Service):
    resp = httpx.post(f"{service.url}/v1/threads/blank-1/messages", json={"message": " \u3000 "},
                      headers=auth(U1) | {"Accept": "text/event-stream"}, timeout=60)
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "bad_input", resp.text
    unknown = httpx.get(f"{service.url}/v1/threads/blank-1/history", headers=auth(U1))
    assert unknown.status_code == 404  # a refused first message makes no thread


def test_a_double_clicked_confirmation_over_http_writes_once(service: Service):
    asked = send(service.url, U1, "dbl-1", REFUND_Q).json()
    assert asked["status"] == "needs_confirmation", asked
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda _: confirm(service.url, U1, "dbl-1"), range(2)))
    assert [r.status_code for r in replies] == [200, 200], [r.text for r in replies]
    first, second = (r.json() for r in replies)
    assert first == second and first["status"] == "answered" and first["answer"]
    assert len(shop_tickets(service.data_dir / "shop.sqlite", REFUND_ORDER)) == 1


def test_the_desk_flow_delivers_a_human_reply_to_the_customers_stream(service: Service):
    url = service.url
    handed = send(url, U2, "desk-1", HANDOFF_Q).json()
    assert handed["status"] == "handoff"
    # the customer cannot author the human reply: there is nothing to confirm
    assert confirm(url, U2, "desk-1").json()["error"]["code"] == "handoff_pending"
    queue = httpx.get(f"{url}/v1/desk/handoffs", headers=auth(AGENT_TOKEN)).json()
    item = next(h for h in queue if h["thread_id"] == "desk-1")
    assert item["status"] == "open" and item["question"] == HANDOFF_Q
    assert item["payload"]["trace_id"] == handed["trace_id"] and item["reason"]
    hid = item["id"]
    before = httpx.post(f"{url}/v1/desk/handoffs/{hid}/reply", json={"text": "x"},
                        headers=auth(AGENT_TOKEN))
    assert before.status_code == 409 and before.json()["error"]["code"] == "not_claimed"
    assert httpx.post(f"{url}/v1/desk/handoffs/{hid}/claim",
                      headers=auth(AGENT_TOKEN)).status_code == 200
    other = httpx.post(f"{url}/v1/desk/handoffs/{hid}/claim", headers=auth(AGENT2_TOKEN))
    assert other.status_code == 409
    trace = httpx.get(f"{url}/v1/desk/traces/{handed['trace_id']}", headers=auth(AGENT_TOKEN))
    assert trace.status_code == 200 and trace.json()["trace_id"] == handed["trace_id"]

    seen: list[tuple[str, dict]] = []
    text = "您好，我是人工客服小优，您的投诉已登记，24小时内给您回电。"

    def watch() -> None:
        with httpx.stream("GET", f"{url}/v1/threads/desk-1/events?after=2",
                          headers=auth(U2) | {"Accept": "text/event-stream"}, timeout=60) as r:
            for event, data, _ in parse_sse(r.iter_lines()):
                seen.append((event, data))
                if event == "reply" and data.get("answered_by") == "human":
                    return

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        watcher = pool.submit(watch)
        time.sleep(0.5)
        sent = httpx.post(f"{url}/v1/desk/handoffs/{hid}/reply", json={"text": text},
                          headers=auth(AGENT_TOKEN), timeout=60)
        assert sent.status_code == 200 and sent.json()["answered_by"] == "human"
        watcher.result(timeout=30)
    assert seen[0][0] == "ready" and seen[-1][1]["text"] == text
    resolved = httpx.post(f"{url}/v1/desk/handoffs/{hid}/resolve", headers=auth(AGENT_TOKEN))
    assert resolved.status_code == 200 and resolved.json()["status"] == "resolved"
    late = httpx.post(f"{url}/v1/desk/handoffs/{hid}/reply", json={"text": "x"},
                      headers=auth(AGENT_TOKEN))
    assert late.status_code == 409  # a resolved handoff takes no more replies


# --- the OpenAPI schema is the contract: fuzz it ------------------------------------------------
# (hypothesis strategies per operation, driven directly: schemathesis' pytest plugin does not load
# under this pytest version)
FUZZ_EXAMPLES = 25


def _fuzz_one(operation, service: Service, checks: list, calls: dict[str, int]) -> None:
    label = f"{operation.method.upper()} {operation.path}"
    token = AGENT_TOKEN if operation.path.startswith("/v1/desk") else U1

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def fuzz(case):
        calls[label] = calls.get(label, 0) + 1
        case.call_and_validate(base_url=service.url, headers=auth(token), timeout=60,
                               checks=checks)

    fuzz()


def test_the_openapi_schema_holds_under_fuzzing(service: Service):
    api = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
    checks = [not_a_server_error, status_code_conformance, content_type_conformance,
              response_schema_conformance]
    # the live thread stream is an open-ended SSE stream, not a request/response: it is tested
    # in test_the_desk_flow_delivers_a_human_reply_to_the_customers_stream instead
    operations = [op for op in (result.ok() for result in api.get_all_operations())
                  if not op.path.endswith("/events")]
    assert len(operations) >= 10
    calls: dict[str, int] = {}
    for operation in operations:
        _fuzz_one(operation, service, checks, calls)
    assert all(n >= 1 for n in calls.values()) and len(calls) == len(operations), calls


def test_the_schema_documents_every_customer_and_desk_operation(service: Service):
    spec = httpx.get(f"{service.url}/openapi.json").json()
    assert {"/v1/threads/{thread_id}/messages", "/v1/threads/{thread_id}/confirm",
            "/v1/threads/{thread_id}/history", "/v1/threads/{thread_id}/events",
            "/v1/desk/handoffs", "/v1/desk/handoffs/{handoff_id}/claim",
            "/v1/desk/handoffs/{handoff_id}/reply",
            "/v1/desk/handoffs/{handoff_id}/resolve"} <= set(spec["paths"])
    path = Path(__file__)
    assert path.name.startswith("test_service_")
