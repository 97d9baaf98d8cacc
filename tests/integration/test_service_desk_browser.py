"""The human agents' desk, end to end in headless Chromium (Debian's chromium + playwright).

A customer's message is handed off; the agent signs in at ``/desk``, sees it in the queue with
the reason and the conversation, claims it, replies, and the customer's live SSE stream shows
the reply as ``answered_by="human"``; then the agent resolves it. Skipped, with the reason, when
Chromium or playwright is missing (``make browser`` installs Chromium where apt is available).
Set ``CSAGENT_DESK_SCREENSHOT=path.png`` to keep a screenshot of the desk with the handoff.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
from pathlib import Path

import httpx
import pytest

from tests.integration.service_support import (
    AGENT_TOKEN,
    CUSTOMER,
    POLICY_Q,
    Service,
    auth,
    parse_sse,
    send,
    shared_index,
    stream_turn,
)

CHROMIUM = os.environ.get("CSAGENT_CHROMIUM", "/usr/bin/chromium")


def _browser_missing() -> str | None:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return f"no Chromium at {CHROMIUM} (run `make browser`, or apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        return f"playwright not installed: {exc}"
    return None


pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))]
U2 = CUSTOMER["u1002"]
REPLY = "您好，我是人工客服小优。您反映的问题已登记，我们会在24小时内电话联系您。"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    svc = Service(data_dir=tmp_path_factory.mktemp("desk-data"),
                  index_dir=shared_index(tmp_path_factory)).start()
    yield svc
    svc.stop()


def _wait_for_human_reply(url: str, thread: str, after: int) -> list[dict]:
    got: list[dict] = []
    with httpx.stream("GET", f"{url}/v1/threads/{thread}/events?after={after}",
                      headers=auth(U2) | {"Accept": "text/event-stream"}, timeout=120) as resp:
        assert resp.status_code == 200
        for event, data, _ in parse_sse(resp.iter_lines()):
            got.append({"event": event, **data})
            if event == "reply" and data.get("answered_by") == "human":
                break
    return got


def test_an_agent_answers_a_handoff_from_the_desk(service: Service, tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    thread = "browser-1"
    assert send(service.url, U2, thread, POLICY_Q).json()["status"] == "answered"
    question = "我买的东西一直没人处理，我要投诉，给我转人工客服！"
    events = stream_turn(service.url, U2, thread, question)
    assert events[-1][0] == "result" and events[-1][1]["status"] == "handoff", events[-1]
    seq = httpx.get(f"{service.url}/v1/threads/{thread}/history", headers=auth(U2)).json()
    after = seq["events"][-1]["seq"]

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        customer_stream = pool.submit(_wait_for_human_reply, service.url, thread, after)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 900}, locale="zh-CN")
            page.goto(f"{service.url}/desk")
            expect(page.get_by_role("heading", name="坐席登录")).to_be_visible()
            page.fill("#token", U2)  # a customer's token is refused
            page.click("#enter")
            expect(page.locator("#loginErr")).to_contain_text("不是人工客服")
            page.fill("#token", AGENT_TOKEN)
            page.click("#enter")
            expect(page.locator("#who")).to_contain_text("客服小优")
            item = page.locator("#queue li", has_text=question)
            expect(item).to_be_visible(timeout=10_000)
            expect(item).to_contain_text("客户要求转人工")
            item.click()
            detail = page.locator("#detail")
            expect(detail).to_contain_text("客户问题：" + question)
            expect(detail).to_contain_text(POLICY_Q)  # the conversation so far
            expect(detail.locator(".msg.customer")).to_have_count(2)
            page.click("#claim")
            expect(page.locator("#send")).to_be_enabled(timeout=10_000)
            page.fill("#reply", REPLY)
            shot = Path(os.environ.get("CSAGENT_DESK_SCREENSHOT") or tmp_path / "desk.png")
            page.screenshot(path=str(shot), full_page=True)
            page.click("#send")
            expect(detail.locator(".msg.human")).to_contain_text(REPLY, timeout=15_000)
            got = customer_stream.result(timeout=60)
            page.click("#resolve")
            expect(page.locator("#queue li", has_text=question)).to_have_count(0,
                                                                              timeout=10_000)
            browser.close()
    assert shot.exists() and shot.stat().st_size > 10_000
    assert got[0]["event"] == "ready"
    assert got[-1]["text"] == REPLY and got[-1]["answered_by"] == "human"
    history = httpx.get(f"{service.url}/v1/threads/{thread}/history", headers=auth(U2)).json()
    assert history["events"][-1]["answered_by"] == "human" and history["pending"] is None
    resolved = httpx.get(f"{service.url}/v1/desk/handoffs?status=resolved",
                         headers=auth(AGENT_TOKEN)).json()
    assert any(h["thread_id"] == thread and h["agent_id"] == "agent-xiaoyou" for h in resolved)
