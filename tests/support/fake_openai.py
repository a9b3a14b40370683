"""A real local HTTP server that speaks the OpenAI Chat Completions protocol with scripted replies.

Tests point the real `openai` client at it. `script(request) -> reply` decides each answer: a string
(the message content), an (http_status, body) or (http_status, body, headers) tuple to inject failures,
or a `Raw` reply (any bytes, optionally trickled out slowly) to play a broken endpoint.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[dict[str, Any]], Any]


@dataclass
class Raw:
    """A reply sent as it is: `body` bytes with `status`, one byte every `trickle` seconds when set."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    trickle: float = 0.0


class FakeOpenAI:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    outer.requests.append(body)
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                answer = outer.script(body)
                if isinstance(answer, Raw):
                    return self._send_raw(answer)
                if isinstance(answer, tuple):
                    return self._send(*answer)
                prompt = " ".join(m.get("content", "") for m in body.get("messages", []))
                return self._send(200, {
                    "id": f"chatcmpl-{len(outer.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": answer}}],
                    "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(answer.split()),
                              "total_tokens": len(prompt.split()) + len(answer.split())},
                })

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_raw(self, raw: Raw) -> None:
                self.send_response(raw.status)
                self.send_header("Content-Type", raw.content_type)
                self.send_header("Content-Length", str(len(raw.body)))
                self.end_headers()
                try:
                    if not raw.trickle:
                        self.wfile.write(raw.body)
                        return
                    for i in range(len(raw.body)):
                        self.wfile.write(raw.body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(raw.trickle)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on us, as it should

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def prompts(self) -> list[str]:
        with self._lock:
            return [r["messages"][-1]["content"] for r in self.requests]


def phase_of(request: dict[str, Any]) -> str:
    """Which of the method's prompts this is: 'plan', 'code' or 'fix'."""
    text = request["messages"][-1]["content"]
    if "but it failed (" in text:
        return "fix"
    if "Optimize it following this plan:" in text:
        return "code"
    return "plan"
