"""A real local HTTP server that speaks the OpenAI Chat Completions protocol with scripted replies.

Tests point the real `openai` client at it. `script(request) -> reply` decides each answer: a string
(the message content), or an (http_status, body) tuple to inject failures.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[dict[str, Any]], "str | tuple[int, dict[str, Any]]"]


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

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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
