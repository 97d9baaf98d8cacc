"""Ingest and search through a real Chroma server (``chroma run``) via CSAGENT_CHROMA_URL."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from csagent.cli import main

pytestmark = pytest.mark.integration

DOCS = {
    "returns.md": "---\nid: returns-7day\ntitle: 七天无理由退货\n---\n# 七天无理由退货\n\n签收后7天内商品完好可申请无理由退货。\n",
    "invoice.md": "---\nid: invoices\ntitle: 发票说明\n---\n# 发票说明\n\n电子发票在确认收货后24小时内开具。\n",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chroma_executable() -> str:
    exe = Path(sys.executable).with_name("chroma")
    found = str(exe) if exe.exists() else shutil.which("chroma")
    if not found:
        pytest.skip("the chroma CLI is not installed")
    return found


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    log = (data / "server.log").open("w")
    proc = subprocess.Popen(
        [chroma_executable(), "run", "--path", str(data / "db"), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        import chromadb

        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"chroma server exited: {(data / 'server.log').read_text()[-2000:]}")
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                if time.monotonic() > deadline:
                    pytest.fail("chroma server did not come up within 60 s")
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_ingest_and_search_via_server(
    chroma_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import chromadb

    monkeypatch.setenv("CSAGENT_CHROMA_URL", chroma_url)
    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in DOCS.items():
        (kb / name).write_text(text, encoding="utf-8")
    index_dir = tmp_path / "index"
    assert main(["ingest", str(kb), "--index", str(index_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["added"]) == ["invoices", "returns-7day"]
    assert not (index_dir / "chroma").exists()  # vectors went to the server, not a local dir

    port = int(chroma_url.rsplit(":", 1)[1])
    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    collection = client.get_collection(manifest["collection"], embedding_function=None)
    assert collection.count() == report["chunks"] == 2

    assert main(["search", "电子发票多久开", "--index", str(index_dir), "--mode", "vector",
                 "-k", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["doc_id"] == "invoices"

    (kb / "invoice.md").unlink()
    assert main(["ingest", str(kb), "--index", str(index_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == ["invoices"]
    assert collection.count() == 1


def test_unreachable_server_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CSAGENT_CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.txt").write_text("内容", encoding="utf-8")
    code = main(["ingest", str(kb), "--index", str(tmp_path / "index")])
    err = capsys.readouterr().err
    assert code != 0 and "Chroma server" in err and "Traceback" not in err
