"""The editor's key, and one written into the base URL, reach the endpoint and no message, log or stored
byte (docs/threat-model.md, "Secrets")."""

from __future__ import annotations

import uuid

import pytest
from lsp_editor import toy_file

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def test_keys_from_the_editor_and_its_base_url_are_in_no_message_log_or_store(start_editor, toy_workspace, capfd):
    from support.fake_openai import FakeOpenAI

    key = f"sk-canary-{uuid.uuid4().hex}"
    url_key = f"sk-canary-url-{uuid.uuid4().hex}"

    def script(request: dict) -> tuple[int, dict]:  # an endpoint that quotes the keys it was sent back
        return 401, {"error": {"message": f"Incorrect API key provided: {key} (user:{url_key})"}}

    with FakeOpenAI(script) as llm:
        settings = {"llm": {"baseUrl": llm.base_url.replace("http://", f"http://user:{url_key}@"), "models": ["m"],
                            "apiKey": key},
                    "search": {"iterations": 1, "beam": 1, "plans": 1, "codes": 1}}
        editor = await start_editor(toy_workspace, settings)
        uri = editor.open(toy_file(toy_workspace, "keys.toy"))
        started = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
        end = await editor.run_end(started["runId"])
        report = await editor.request("speedpatch/runReport", {"runId": started["runId"]})
        assert llm.headers, "the endpoint was never asked"
    assert end["status"] == "interrupted" and "[redacted" in end["message"]
    sent = repr((end, report, editor.run_updates, editor.message_requests, editor.client.messages,
                 editor.client.log_messages))
    logs = capfd.readouterr()
    for secret in (key, url_key):
        assert secret not in sent and secret not in logs.err and secret not in logs.out
        assert [f.name for f in (toy_workspace / ".speedpatch").iterdir() if secret.encode() in f.read_bytes()] == []


async def test_a_refused_base_url_is_shown_without_its_key(start_editor, toy_workspace, capfd):
    url_key = f"sk-canary-url-{uuid.uuid4().hex}"
    settings = {"llm": {"baseUrl": f"ftp://user:{url_key}@127.0.0.1:9/v1", "models": ["m"]},
                "search": {"iterations": 1, "beam": 1, "plans": 1, "codes": 1}}
    editor = await start_editor(toy_workspace, settings)
    uri = editor.open(toy_file(toy_workspace, "refused.toy"))
    try:
        answer = await editor.command("speedpatch.optimize", {"uri": uri, "kernel": "kernel_sum"})
    except Exception as exc:  # the command's error, as the editor shows it
        answer = repr(exc)
    await editor.until(lambda: editor.client.messages or "not an http" in repr(answer), what="the refusal")
    shown = repr((answer, editor.run_updates, editor.client.messages, editor.client.log_messages))
    assert "is not an http:// or https:// URL" in shown
    logs = capfd.readouterr()
    assert url_key not in shown and url_key not in logs.err and url_key not in logs.out
