"""The chat client (speedpatch.llm.client) with the real `openai` package against a local fake server."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from speedpatch.config import LLMConfig
from speedpatch.errors import LLMError, LLMRequestError
from speedpatch.llm.client import ChatClient
from support.fake_openai import FakeOpenAI, Raw


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # keys of the machine running the tests must neither leak into requests nor change results
    monkeypatch.delenv("SPEEDPATCH_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


class Server:
    """One fake endpoint for the whole module (starting and stopping one costs ~0.5 s); each test scripts it."""

    def __init__(self) -> None:
        self.script: Callable[[dict[str, Any]], Any] | None = None
        self.fake = FakeOpenAI(lambda request: self.script(request))

    def __call__(self, script: Callable[[dict[str, Any]], Any]) -> FakeOpenAI:
        self.script = script
        self.fake.requests.clear()
        self.fake.headers.clear()
        return self.fake


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Server]:
    server = Server()
    with server.fake:
        yield server


@pytest.fixture
def serve(endpoint: Server):
    """serve(*answers): the endpoint answers with `answers` in turn (the last one repeats)."""

    def start(*answers) -> FakeOpenAI:
        queue = list(answers)
        return endpoint(lambda request: queue.pop(0) if len(queue) > 1 else queue[0])

    return start


def client(server: FakeOpenAI, sleeps: list[float] | None = None, **settings) -> ChatClient:
    config = LLMConfig(base_url=server.base_url, models=["model-a"], **settings)
    recorded = sleeps if sleeps is not None else []
    return ChatClient(config, sleep=recorded.append)


def server_error(status: int = 500, message: str = "try again later"):
    return (status, {"error": {"message": message, "type": "server_error"}})


def auth_header(server: FakeOpenAI, index: int = -1) -> str:
    headers = {k.lower(): v for k, v in server.headers[index].items()}
    return headers.get("authorization", "")


def test_a_reply_text_and_token_usage_come_back(serve):
    server = serve("Tile the loop by 16.")
    reply = client(server).chat("model-a", "one two three")
    assert reply.text == "Tile the loop by 16."
    assert reply.model == "model-a"
    assert (reply.prompt_tokens, reply.completion_tokens) == (3, 5)
    assert reply.seconds >= 0


def test_the_prompt_is_sent_as_one_user_message_to_the_named_model(serve):
    server = serve("ok")
    client(server).chat("model-b", "the prompt")
    request = server.requests[-1]
    assert request["model"] == "model-b"
    assert request["messages"] == [{"role": "user", "content": "the prompt"}]


def test_the_configured_temperature_is_sent_and_a_call_may_override_it(serve):
    server = serve("ok")
    chat = client(server, temperature=0.7)
    chat.chat("model-a", "p")
    chat.chat("model-a", "p", temperature=0.0)
    assert [r["temperature"] for r in server.requests] == [0.7, 0.0]


def test_max_tokens_is_sent_only_when_configured(serve):
    server = serve("ok")
    client(server).chat("model-a", "p")
    client(server, max_tokens=500).chat("model-a", "p")
    assert "max_tokens" not in server.requests[0]
    assert server.requests[1]["max_tokens"] == 500


def test_transient_server_errors_are_retried_with_exponential_backoff(serve):
    sleeps: list[float] = []
    server = serve(server_error(), server_error(), server_error(), "finally")
    reply = client(server, sleeps).chat("model-a", "p")
    assert reply.text == "finally"
    assert len(server.requests) == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_rate_limits_are_retried_too(serve):
    sleeps: list[float] = []
    server = serve(server_error(429, "rate limited"), "ok")
    assert client(server, sleeps).chat("model-a", "p").text == "ok"
    assert sleeps == [0.5]


def test_llm_error_after_the_retries_are_used_up(serve):
    sleeps: list[float] = []
    server = serve(server_error(503, "overloaded"))
    with pytest.raises(LLMError, match=r"model-a: .* failed after 3 attempts: .*overloaded"):
        client(server, sleeps, retries=2).chat("model-a", "p")
    assert len(server.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_a_400_naming_temperature_drops_it_for_this_and_later_calls(endpoint):
    def script(request):
        if "temperature" in request:
            return (400, {"error": {"message": "Unsupported parameter: 'temperature' is not supported with "
                                               "this model.", "param": "temperature"}})
        return "ok"

    sleeps: list[float] = []
    server = endpoint(script)
    chat = client(server, sleeps)
    assert chat.chat("model-a", "first").text == "ok"
    assert chat.chat("model-a", "second").text == "ok"
    assert ["temperature" in r for r in server.requests] == [True, False, False]
    assert sleeps == []  # a rejected parameter is not a transient failure: no backoff


def test_a_parameter_one_model_rejects_is_still_sent_to_the_other_models(endpoint):
    def script(request):
        if request["model"] == "picky" and "temperature" in request:
            return (400, {"error": {"message": "Unsupported parameter: 'temperature'"}})
        return "ok"

    server = endpoint(script)
    chat = client(server, temperature=0.3)
    chat.chat("picky", "p")
    chat.chat("model-a", "p")
    assert server.requests[-1]["temperature"] == 0.3


def test_a_refused_max_tokens_is_sent_again_as_max_completion_tokens(endpoint):
    def script(request):
        if "max_tokens" in request:
            return (400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this "
                                               "model. Use 'max_completion_tokens' instead."}})
        return "ok"

    server = endpoint(script)
    client(server, max_tokens=500).chat("o3-mini", "p")
    assert server.requests[-1].get("max_completion_tokens") == 500


def test_a_400_naming_no_sent_parameter_is_an_llm_error(serve):
    server = serve((400, {"error": {"message": "the prompt is too long"}}))
    with pytest.raises(LLMError, match="request rejected: .*the prompt is too long"):
        client(server).chat("model-a", "p")
    assert len(server.requests) == 1


def test_401_gives_an_llm_error_saying_to_check_the_key(serve):
    server = serve((401, {"error": {"message": "Incorrect API key provided"}}))
    with pytest.raises(LLMError, match="check the endpoint, model name and API key"):
        client(server).chat("model-a", "p")
    assert len(server.requests) == 1  # not retried


def test_an_unknown_model_gives_an_llm_error_without_retries(serve):
    server = serve((404, {"error": {"message": "The model `nope` does not exist"}}))
    with pytest.raises(LLMError, match="nope"):
        client(server).chat("nope", "p")
    assert len(server.requests) == 1


@pytest.mark.parametrize("model", ["o3-mini", "o1", "openai/o4-mini", "gpt-5"])
def test_reasoning_models_are_sent_no_temperature(model, serve):
    server = serve("ok")
    client(server).chat(model, "p")
    assert "temperature" not in server.requests[-1]


def test_reasoning_models_get_the_configured_reasoning_effort(serve):
    server = serve("ok")
    chat = client(server, reasoning_effort="high")
    chat.chat("o3-mini", "p")
    chat.chat("model-a", "p")
    assert server.requests[0]["reasoning_effort"] == "high"
    assert "reasoning_effort" not in server.requests[1]
    assert "temperature" in server.requests[1]


def test_the_api_key_from_speedpatch_api_key_is_sent_as_bearer(monkeypatch, serve):
    monkeypatch.setenv("SPEEDPATCH_API_KEY", "sk-speedpatch")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    server = serve("ok")
    client(server).chat("model-a", "p")
    assert auth_header(server) == "Bearer sk-speedpatch"


def test_the_api_key_falls_back_to_openai_api_key(monkeypatch, serve):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    server = serve("ok")
    client(server).chat("model-a", "p")
    assert auth_header(server) == "Bearer sk-openai"


def test_a_runtime_api_key_wins_over_the_environment(monkeypatch, serve):
    monkeypatch.setenv("SPEEDPATCH_API_KEY", "sk-env")
    server = serve("ok")
    client(server, api_key="sk-runtime").chat("model-a", "p")
    assert auth_header(server) == "Bearer sk-runtime"


def test_an_unreachable_endpoint_is_an_llm_error_after_retries():
    # a port nothing listens on: bind one, then close it
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    probe.close()
    sleeps: list[float] = []
    chat = ChatClient(LLMConfig(base_url=url, retries=1, timeout=5), sleep=sleeps.append)
    with pytest.raises(LLMError, match="failed after 2 attempts"):
        chat.chat("model-a", "p")
    assert sleeps == [0.5]


def test_a_429_waits_the_seconds_its_retry_after_asks_for(serve):
    sleeps: list[float] = []
    limited = (429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "7"})
    server = serve(limited, limited, "ok")
    assert client(server, sleeps).chat("model-a", "p").text == "ok"
    assert sleeps == [7.0, 7.0]


def test_a_429_retry_after_ms_is_honoured_in_seconds(serve):
    sleeps: list[float] = []
    server = serve((429, {"error": {"message": "slow down"}}, {"retry-after-ms": "1500"}), "ok")
    assert client(server, sleeps).chat("model-a", "p").text == "ok"
    assert sleeps == [1.5]


def test_a_400_for_a_too_long_prompt_fails_only_that_request(serve):
    server = serve((400, {"error": {"message": "This model's maximum context length is 8192 tokens",
                                    "type": "invalid_request_error"}}))
    with pytest.raises(LLMRequestError, match="longer than this model's context"):
        client(server).chat("model-a", "p")
    assert len(server.requests) == 1


def test_a_200_whose_body_is_not_json_is_an_llm_error_not_a_crash(serve):
    sleeps: list[float] = []
    server = serve(Raw(b"<html>gateway</html>"))
    with pytest.raises(LLMError, match="not JSON .*base_url"):
        client(server, sleeps, retries=1).chat("model-a", "p")
    assert len(server.requests) == 2


def test_an_answer_trickling_in_is_cut_at_the_overall_deadline(serve):
    body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "model-a",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "late"},
                                    "finish_reason": "stop"}]}).encode()
    server = serve(Raw(body, trickle=0.2))
    start = time.monotonic()
    with pytest.raises(LLMError, match="no complete answer within 1 s"):
        client(server, retries=0, timeout=1.0).chat("model-a", "p")
    assert time.monotonic() - start < 5


def test_the_seconds_of_a_reply_are_the_models_not_the_wait_for_a_free_connection(endpoint):
    def slow(request):
        time.sleep(1.0)
        return "ok"

    server = endpoint(slow)
    chat = client(server, max_concurrency=1)  # the second call waits ~1 s for the first to finish
    seconds: list[float] = []
    threads = [threading.Thread(target=lambda: seconds.append(chat.chat("model-a", "p").seconds)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # both took the model ~1 s (counted with the wait, the second would be about twice the first)
    assert len(seconds) == 2 and min(seconds) >= 1.0 and max(seconds) < 1.5 * min(seconds), seconds


def test_the_seconds_of_a_retried_reply_count_every_attempt_but_not_the_backoff(endpoint):
    calls: list[float] = []

    def slow_then_ok(request):
        calls.append(time.monotonic())
        time.sleep(0.5)
        return server_error() if len(calls) == 1 else "ok"

    server = endpoint(slow_then_ok)
    waits: list[float] = []
    chat = ChatClient(LLMConfig(base_url=server.base_url, models=["model-a"]), sleep=lambda s: waits.append(s))
    reply = chat.chat("model-a", "p")
    assert reply.text == "ok" and len(calls) == 2 and waits == [0.5]
    assert 1.0 <= reply.seconds < 1.5, reply.seconds  # two half-second attempts; the backoff was not slept
