"""Two ``csagent serve`` workers on two ports sharing one Postgres database (issue 11 item 3/4).

Checkpoints (langgraph-checkpoint-postgres), the thread store, the desk's queue and the per-thread
advisory locks all live in a database created for this run and dropped after it. A conversation
alternates between the workers across a confirmation interrupt; one worker is SIGKILLed in the
middle of a turn and the other carries on: nothing lost, nothing duplicated, one write.
Skipped, with the reason, when no Postgres is reachable (``CSAGENT_TEST_PG_URL`` overrides the
admin URL, default ``postgresql://postgres@127.0.0.1:5432/postgres``).
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import httpx
import pytest

from tests.integration.service_support import (
    CUSTOMER,
    POLICY_Q,
    REFUND_ORDER,
    REFUND_Q,
    Service,
    auth,
    confirm,
    parse_sse,
    pg_available,
    send,
    shared_index,
    shop_tickets,
    temporary_database,
)

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(pg_available() is not None,
                                 reason=str(pg_available()))]
U1 = CUSTOMER["u1001"]


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory):
    index = shared_index(tmp_path_factory)
    root = tmp_path_factory.mktemp("pg-workers")
    shop = {"CSAGENT_SHOP_DB": str(root / "shop.sqlite")}  # the shop's own backend, shared
    with temporary_database() as url:
        a = Service(data_dir=root / "a", index_dir=index, database_url=url, extra_env=shop)
        b = Service(data_dir=root / "b", index_dir=index, database_url=url, extra_env=shop)
        a.start()
        b.start()
        try:
            yield a, b, root / "shop.sqlite", url
        finally:
            a.stop()
            b.stop()


def _history(svc: Service, thread: str) -> list[dict]:
    resp = httpx.get(f"{svc.url}/v1/threads/{thread}/history", headers=auth(U1), timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()["events"]


def _checkpoint_messages(url: str, thread: str) -> list[tuple[str, str]]:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        latest = saver.get_tuple({"configurable": {"thread_id": thread}})
    assert latest is not None
    messages = latest.checkpoint["channel_values"].get("messages") or []
    return [(m.type, str(m.content)) for m in messages]


def test_both_workers_use_postgres(workers):
    a, b, _, _ = workers
    for svc in (a, b):
        assert httpx.get(f"{svc.url}/healthz").json()["backend"] == "postgres"


def test_a_conversation_alternates_between_workers_across_a_confirmation(workers):
    a, b, shop, url = workers
    thread = "pg-alt"
    first = send(a.url, U1, thread, POLICY_Q).json()
    assert first["status"] == "answered", first
    asked = send(b.url, U1, thread, REFUND_Q).json()  # the other worker knows the thread
    assert asked["status"] == "needs_confirmation", asked
    done = confirm(a.url, U1, thread).json()  # the confirmation lands on the first worker
    assert done["status"] == "answered" and "失败" not in done["answer"], done
    again = confirm(b.url, U1, thread).json()  # a retried confirmation on the other worker
    assert again == done
    assert len(shop_tickets(shop, REFUND_ORDER)) == 1
    assert send(b.url, CUSTOMER["u1002"], thread, POLICY_Q).status_code == 403
    events = _history(b, thread)
    assert [(e["type"], e["status"]) for e in events] == [
        ("message", None), ("reply", "answered"), ("message", None),
        ("reply", "needs_confirmation"), ("reply", "answered")]
    humans = [text for kind, text in _checkpoint_messages(url, thread) if kind == "human"]
    assert humans == [POLICY_Q, REFUND_Q]


def test_the_same_thread_on_both_workers_at_once_runs_one_turn_at_a_time(workers):
    a, b, _, url = workers
    thread = "pg-race"
    assert send(a.url, U1, thread, POLICY_Q).status_code == 200
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda svc: send(svc.url, U1, thread, POLICY_Q), [a, b, a, b]))
    assert [r.status_code for r in replies] == [200] * 4, [r.text for r in replies]
    assert len({r.json()["trace_id"] for r in replies}) == 4
    kinds = [e["type"] for e in _history(a, thread)]
    assert kinds == ["message", "reply"] * 5  # strictly paired: no interleaving
    assert [k for k, _ in _checkpoint_messages(url, thread)] == ["human", "ai"] * 5


def test_a_worker_killed_mid_turn_loses_and_duplicates_nothing(workers, tmp_path: Path):
    a, b, _, url = workers
    thread = "pg-kill"
    assert send(a.url, U1, thread, POLICY_Q).json()["status"] == "answered"
    headers = auth(U1) | {"Accept": "text/event-stream"}
    seen = []
    with httpx.stream("POST", f"{a.url}/v1/threads/{thread}/messages",
                      json={"message": "那换货的运费呢？"}, headers=headers, timeout=60) as resp:
        for event, data, _ in parse_sse(resp.iter_lines()):
            seen.append(event)
            if event == "progress":
                a.kill()  # SIGKILL in the middle of the turn
                break
    assert seen[:2] == ["accepted", "progress"]
    # the other worker carries on with the same conversation
    nxt = send(b.url, U1, thread, POLICY_Q)
    assert nxt.status_code == 200, nxt.text
    body = nxt.json()
    assert body["status"] == "answered"
    events = _history(b, thread)
    messages = [e["text"] for e in events if e["type"] == "message"]
    replies = [e for e in events if e["type"] == "reply"]
    # the interrupted message is either finished by the survivor (reported as recovered) or was
    # never accepted; it is never lost half-way nor answered twice
    assert messages in ([POLICY_Q, "那换货的运费呢？", POLICY_Q], [POLICY_Q, POLICY_Q]), messages
    assert len(replies) == len(messages), events
    if body["recovered"] is not None:  # the survivor finished the killed turn first
        assert len(messages) == 3 and body["recovered"]["trace_id"] == replies[1]["trace_id"]
    humans = [text for kind, text in _checkpoint_messages(url, thread) if kind == "human"]
    assert humans == messages
    a.start()  # the worker comes back on its port and sees the same thread
    assert len(_history(a, thread)) == len(events)



def test_processes_opening_a_fresh_database_together_do_not_deadlock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The checkpointer's migration (CREATE INDEX CONCURRENTLY) waits for older snapshots: whoever
    waits for the migration lock must not hold one (a blocking pg_advisory_lock does)."""
    from csagent.config import Settings
    from csagent.runtime import open_backend

    with temporary_database() as url:
        monkeypatch.setenv("CSAGENT_DATABASE_URL", url)
        settings = Settings(data_dir=tmp_path)

        def open_close() -> str:
            backend = open_backend(settings, connections=2)
            backend.close()
            return backend.kind

        pool = concurrent.futures.ThreadPoolExecutor(4)
        futures = [pool.submit(open_close) for _ in range(4)]
        done, _ = concurrent.futures.wait(futures, timeout=90)
        pool.shutdown(wait=False)  # (a deadlock ends when the database is dropped with FORCE)
        assert len(done) == 4, "opening the backend deadlocked"
        assert [f.result() for f in futures] == ["postgres"] * 4
