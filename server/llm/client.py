"""One chat call to any OpenAI-compatible endpoint, through the official `openai` package.

Retries transient failures (connection, 5xx, 429, a body that is not JSON, an answer not complete within
the overall deadline), waiting what a rate-limiting server asks for (Retry-After) or backing off
exponentially; a request refused for what it asks (context too long) is an LLMRequestError that fails
only its sample. A parameter the endpoint rejects (temperature
on reasoning models, max_tokens vs max_completion_tokens, reasoning_effort elsewhere) is remembered and
dropped for later calls. The API key is passed to the client and nowhere else.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

from speedpatch.config import LLMConfig
from speedpatch.errors import LLMError, LLMRequestError

_REASONING = re.compile(r"(^|/)(o\d|gpt-5)", re.I)


@dataclass
class Reply:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


class ChatClient:
    def __init__(self, config: LLMConfig, sleep: Callable[[float], None] = time.sleep) -> None:
        import openai  # here, not at module level: it takes seconds to import and offline runs never need it

        self._openai = openai
        self.config = config
        self._key = config.resolved_api_key() or "not-needed"  # local endpoints accept any key
        self._dropped: dict[str, set[str]] = {}  # model -> parameters its endpoint refused
        self._renamed: dict[str, dict[str, str]] = {}  # model -> {refused name: name to use instead}
        self._lock = threading.Lock()
        self._gate = threading.BoundedSemaphore(max(1, config.max_concurrency))
        self._sleep = sleep

    def _params(self, model: str, temperature: float) -> dict:
        params: dict = {}
        if _REASONING.search(model) and self.config.reasoning_effort:
            params["reasoning_effort"] = self.config.reasoning_effort
        elif not _REASONING.search(model):
            params["temperature"] = temperature
        if self.config.max_tokens:
            params["max_tokens"] = self.config.max_tokens
        with self._lock:
            dropped = self._dropped.get(model, set())
            renamed = self._renamed.get(model, {})
            named = {renamed.get(k, k): v for k, v in params.items()}
            return {k: v for k, v in named.items() if k not in dropped}

    def _rejected_param(self, exc: Exception, params: dict) -> str | None:
        text = str(exc).lower()
        for name in params:
            if name in text:
                return name
        return None

    def chat(self, model: str, prompt: str, temperature: float | None = None) -> Reply:
        openai = self._openai
        transient = (
            openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError, openai.InternalServerError,
            _Deadline, _NotJSON,
        )
        temp = self.config.temperature if temperature is None else temperature
        attempt = 0
        last: Exception | None = None
        spent = 0.0  # the endpoint's seconds over every attempt: not the backoff, not the wait for a connection
        while attempt <= self.config.retries:
            params = self._params(model, temp)
            try:
                with self._gate:
                    start = time.monotonic()
                    try:
                        resp = self._create(model, prompt, params)
                    finally:
                        spent += time.monotonic() - start
            except openai.BadRequestError as exc:
                name = self._rejected_param(exc, params)
                if name is None:
                    raise LLMRequestError(f"{model}: request rejected: {_short(exc)}{_context_hint(exc)}") from exc
                with self._lock:
                    if name in self._dropped.get(model, set()):
                        raise LLMRequestError(f"{model}: request rejected: {_short(exc)}") from exc
                    if name == "max_tokens" and "max_completion_tokens" in str(exc):
                        self._renamed.setdefault(model, {})[name] = "max_completion_tokens"
                    else:
                        self._dropped.setdefault(model, set()).add(name)
                continue  # retry at once without the parameter; does not count as an attempt
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
                raise LLMError(f"{model}: {_short(exc)} (check the endpoint, model name and API key)") from exc
            except openai.UnprocessableEntityError as exc:
                raise LLMRequestError(f"{model}: request rejected: {_short(exc)}") from exc
            except transient as exc:
                last = exc
                attempt += 1
                if attempt <= self.config.retries:
                    self._sleep(self._backoff(exc, attempt))
                continue
            except openai.APIStatusError as exc:
                if exc.status_code == 413:  # the prompt is too large for this endpoint: this sample only
                    raise LLMRequestError(f"{model}: request too large: {_short(exc)}") from exc
                raise LLMError(f"{model}: {_short(exc)}") from exc
            except openai.APIError as exc:
                raise LLMError(f"{model}: {_short(exc)}") from exc
            if not getattr(resp, "choices", None):
                raise LLMRequestError(f"{model}: the endpoint returned no choices")
            text = resp.choices[0].message.content or ""
            usage = resp.usage
            return Reply(
                text=text,
                model=model,
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                seconds=spent,
            )
        where = self.config.base_url or "the default OpenAI endpoint"
        raise LLMError(f"{model}: {where} failed after {self.config.retries + 1} attempts: {_short(last)}")

    def _create(self, model: str, prompt: str, params: dict) -> Any:
        """One request with an overall deadline (config.timeout): the SDK's own timeout is per read, so an
        endpoint that trickles its answer a byte at a time would otherwise hold the call for ever."""
        client = self._openai.OpenAI(
            base_url=self.config.base_url or None, api_key=self._key, max_retries=0, timeout=self.config.timeout
        )
        box: dict[str, Any] = {}
        done = threading.Event()

        def call() -> None:
            try:
                box["value"] = client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": prompt}], **params
                )
            except ValueError as exc:  # a 200 whose body is not JSON (an HTML page, a proxy's error text)
                box["error"] = _NotJSON(f"the endpoint answered with a body that is not JSON ({_short(exc)}); "
                                        "is base_url the OpenAI-compatible /v1 address?")
            except BaseException as exc:  # handed to the caller's thread as it is
                box["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=call, name="llm-call", daemon=True)
        worker.start()
        try:
            if not done.wait(self.config.timeout):
                raise _Deadline(f"no complete answer within {self.config.timeout:.0f} s")
        finally:
            client.close()  # also unblocks a worker still reading a trickling answer
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _backoff(self, exc: Exception, attempt: int) -> float:
        """Seconds to wait before retrying: what a rate-limiting server asks for (Retry-After), else
        exponential backoff."""
        asked = _retry_after(getattr(exc, "response", None))
        if asked is not None:
            return min(asked, MAX_RETRY_AFTER)
        return min(30.0, 0.5 * 2 ** (attempt - 1))


class _Deadline(Exception):
    pass


class _NotJSON(Exception):
    pass


MAX_RETRY_AFTER = 600.0  # seconds; a server asking for longer is as good as down for this search


def _retry_after(response: Any) -> float | None:
    """Retry-After (seconds or an HTTP date) or retry-after-ms of an error response, in seconds."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _context_hint(exc: Exception) -> str:
    text = str(exc).lower()
    if "context" in text and ("length" in text or "window" in text or "token" in text):
        return " (the prompt is longer than this model's context)"
    return ""


def _short(exc: Exception | None) -> str:
    text = " ".join(str(exc).split()) if exc else "unknown error"
    return text[:300]
