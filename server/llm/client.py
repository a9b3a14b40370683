"""One chat call to any OpenAI-compatible endpoint, through the official `openai` package.

Retries with exponential backoff on transient failures; a parameter the endpoint rejects (temperature
on reasoning models, max_tokens vs max_completion_tokens, reasoning_effort elsewhere) is remembered and
dropped for later calls. The API key is passed to the client and nowhere else.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

from speedpatch.config import LLMConfig
from speedpatch.errors import LLMError

_REASONING = re.compile(r"(^|/)(o\d|gpt-5)", re.I)


@dataclass
class Reply:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


class ChatClient:
    def __init__(self, config: LLMConfig, sleep=time.sleep) -> None:
        import openai  # here, not at module level: it takes seconds to import and offline runs never need it

        self._openai = openai
        self.config = config
        key = config.resolved_api_key() or "not-needed"  # local endpoints accept any key
        self._client = openai.OpenAI(
            base_url=config.base_url or None, api_key=key, max_retries=0, timeout=config.timeout
        )
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
        )
        temp = self.config.temperature if temperature is None else temperature
        attempt = 0
        last: Exception | None = None
        while attempt <= self.config.retries:
            params = self._params(model, temp)
            start = time.monotonic()
            try:
                with self._gate:
                    resp = self._client.chat.completions.create(
                        model=model, messages=[{"role": "user", "content": prompt}], **params
                    )
            except openai.BadRequestError as exc:
                name = self._rejected_param(exc, params)
                if name is None:
                    raise LLMError(f"{model}: request rejected: {_short(exc)}") from exc
                with self._lock:
                    if name in self._dropped.get(model, set()):
                        raise LLMError(f"{model}: request rejected: {_short(exc)}") from exc
                    if name == "max_tokens" and "max_completion_tokens" in str(exc):
                        self._renamed.setdefault(model, {})[name] = "max_completion_tokens"
                    else:
                        self._dropped.setdefault(model, set()).add(name)
                continue  # retry at once without the parameter; does not count as an attempt
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
                raise LLMError(f"{model}: {_short(exc)} (check the endpoint, model name and API key)") from exc
            except transient as exc:
                last = exc
                attempt += 1
                if attempt <= self.config.retries:
                    self._sleep(min(30.0, 0.5 * 2 ** (attempt - 1)))
                continue
            except openai.APIError as exc:
                raise LLMError(f"{model}: {_short(exc)}") from exc
            seconds = time.monotonic() - start
            if not resp.choices:
                raise LLMError(f"{model}: the endpoint returned no choices")
            text = resp.choices[0].message.content or ""
            usage = resp.usage
            return Reply(
                text=text,
                model=model,
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                seconds=seconds,
            )
        where = self.config.base_url or "the default OpenAI endpoint"
        raise LLMError(f"{model}: {where} failed after {self.config.retries + 1} attempts: {_short(last)}")


def _short(exc: Exception | None) -> str:
    text = " ".join(str(exc).split()) if exc else "unknown error"
    return text[:300]
