"""``csagent serve`` runs its turns in turn processes: their life cycle and a crash mid-turn.

The service is a real subprocess on a loopback port (SQLite backend, the two-document index);
its turn processes are its ``multiprocessing`` children. A turn process killed with SIGKILL in
the middle of a turn is replaced, and the customer's stream still ends with the turn's result,
recorded once; when the service stops, or is itself killed, its turn processes exit with it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.service_support import (
    CUSTOMER,
    POLICY_Q,
    Service,
    auth,
    parse_sse,
    send,
    shared_index,
)

pytestmark = pytest.mark.integration
U1 = CUSTOMER["u1001"]


def turn_processes(pid: int) -> list[int]:
    """Return the pids of ``pid``'s turn processes (its spawned multiprocessing children)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    found = []
    for child in map(int, children):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"spawn_main" in cmdline:  # (the resource tracker is a child too)
            found.append(child)
    return sorted(found)


def alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.fixture
def service(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path):
    svc = Service(data_dir=tmp_path / "data", index_dir=shared_index(tmp_path_factory)).start()
    yield svc
    svc.stop()


def test_turns_run_outside_the_http_process(service: Service):
    assert service.proc is not None
    workers = turn_processes(service.proc.pid)
    assert len(workers) == 2  # the default --run-processes
    body = send(service.url, U1, "tp-1", POLICY_Q).json()
    assert body["status"] == "answered"
    trace = httpx.get(f"{service.url}/v1/desk/traces/{body['trace_id']}",
                      headers=auth("demo-agent-xiaoyou"))
    assert trace.status_code == 200  # a turn process wrote it where the desk reads traces


def test_a_turn_process_killed_mid_turn_loses_and_duplicates_nothing(service: Service):
    assert service.proc is not None
    before = turn_processes(service.proc.pid)
    assert send(service.url, U1, "tp-kill", POLICY_Q).json()["status"] == "answered"
    headers = auth(U1) | {"Accept": "text/event-stream"}
    seen: list[tuple[str, dict]] = []
    with httpx.stream("POST", f"{service.url}/v1/threads/tp-kill/messages",
                      json={"message": "那换货的运费呢？"}, headers=headers, timeout=120) as resp:
        for event, data, _ in parse_sse(resp.iter_lines()):
            seen.append((event, data))
            if event == "progress" and len(seen) == 2:
                for pid in before:  # whichever runs the turn: both die mid-turn
                    os.kill(pid, signal.SIGKILL)
            if event in ("result", "error"):
                break
    kinds = [k for k, _ in seen]
    assert kinds[:2] == ["accepted", "progress"] and kinds[-1] == "result", seen
    result = seen[-1][1]
    assert result["thread_id"] == "tp-kill" and result["status"] in ("answered", "refused")
    assert wait_for(lambda: len(turn_processes(service.proc.pid)) == 2)
    assert not set(turn_processes(service.proc.pid)) & set(before)  # both replaced
    history = httpx.get(f"{service.url}/v1/threads/tp-kill/history", headers=auth(U1)).json()
    assert [e["type"] for e in history["events"]] == ["message", "reply"] * 2
    assert history["events"][-1]["trace_id"] == result["trace_id"]  # the reply the stream got
    again = send(service.url, U1, "tp-kill", POLICY_Q)
    assert again.status_code == 200 and again.json()["status"] == "answered"


def test_turn_processes_end_with_the_service(tmp_path_factory: pytest.TempPathFactory,
                                             tmp_path: Path):
    index = shared_index(tmp_path_factory)
    for how in ("stop", "kill"):
        svc = Service(data_dir=tmp_path / how, index_dir=index).start()
        assert svc.proc is not None
        workers = turn_processes(svc.proc.pid)
        assert len(workers) == 2
        svc.stop() if how == "stop" else svc.kill()  # SIGTERM (graceful) or SIGKILL
        assert wait_for(lambda: not any(alive(pid) for pid in workers), 30), (how, workers)
