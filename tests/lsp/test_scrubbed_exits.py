"""Whatever leaves the language server, an error response's traceback or a log line, passes redact: a key
quoted by an exception no handler scrubbed stays in the server (docs/threat-model.md, "Secrets")."""

from __future__ import annotations

import json
import logging
import sys

from pygls.exceptions import JsonRpcInternalError
from speedpatch.lsp.server import ScrubbedFormatter, create_server

KEY = "sk-canary-0123456789abcdef"


class Collect:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass


def test_an_error_response_does_not_carry_a_key_its_exception_quoted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = create_server()
    out = Collect()
    server.protocol.set_writer(out)
    try:
        raise RuntimeError(f"endpoint https://user:{KEY}@llm.example/v1 refused")
    except RuntimeError:
        error = JsonRpcInternalError.of(sys.exc_info())
    server.protocol._send_response(7, error=error.to_response_error())
    header, _, body = out.data.decode().partition("\r\n\r\n")
    assert KEY not in out.data.decode()
    assert f"Content-Length: {len(body)}" in header  # still one well-formed message
    sent = json.loads(body)
    assert sent["id"] == 7 and "RuntimeError: endpoint https://user:[redacted" in sent["error"]["message"]


def test_a_log_line_does_not_carry_a_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    record = logging.LogRecord("speedpatch", logging.ERROR, __file__, 1, "failed: %s", (f"key={KEY}",), None)
    line = ScrubbedFormatter("%(levelname)s %(message)s").format(record)
    assert line.startswith("ERROR failed: key=[redacted") and KEY not in line
