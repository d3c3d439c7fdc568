"""A generator behind any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp's server, ...),
on the official ``openai`` client (extra ``llm``).

Only ``POST {base_url}/chat/completions`` is used (``base_url`` includes ``/v1``). The client does
the HTTP, the server-sent events (multi-line ``data:`` fields, comments, keep-alives) and the
retries: connection errors, 408, 409, 429 and 5xx are retried ``retries`` times, waiting as long
as the server's ``Retry-After`` asks (up to two minutes) or else its exponential backoff (0.5 s,
doubling, at most 8 s, with jitter); other 4xx are the caller's mistake and fail at once.

Three choices are medcite's own. A timeout is not retried: a server too slow once is asked
again only to double the wait (the client's HTTP session raises the client's own timeout error,
which its retry loop passes on as is). ``timeout_s`` bounds a whole streamed answer, not only each
read. And the API key is always given to the client (a placeholder when there is none), so it
never picks up ``OPENAI_API_KEY`` from the environment and sends it to a self-hosted server.

Every failure is a :class:`GeneratorError` (:class:`GeneratorTimeout` for timeouts) whose message
names the server, what went wrong and what to check; never the prompt (it may hold a patient's
question).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from core.errors import GeneratorError, GeneratorTimeout, require
from core.types import Generation, Message
from rag.generate.backend import Deadline, candidate_forms, chat_messages, generation, logsumexp

require("openai", package="openai", extra="llm")

import httpx2  # noqa: E402  (the HTTP library of openai>=3)
import openai  # noqa: E402

__all__ = ["OpenAICompatGenerator"]

_TOP_LOGPROBS = 20  # the most OpenAI (and vLLM) allow
_NO_KEY = "sk-no-key-required"  # what llama.cpp's server documents for a server without keys
_RETRIED = {408, 409, 429}  # and every 5xx: the statuses the client retries


class _TimeoutsEndTheCall(openai.DefaultHttpxClient):
    """The client's default HTTP session, except that a timeout raises the client's own
    :class:`openai.APITimeoutError`, which its retry loop re-raises instead of retrying."""

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        try:
            return super().send(request, **kwargs)
        except httpx2.TimeoutException as exc:
            raise openai.APITimeoutError(request=request) from exc


class OpenAICompatGenerator:
    """A :class:`rag.protocols.Generator` over HTTP; thread-safe (one pooled client).

    ``backoff_s`` is accepted for older callers and ignored: the client's backoff (or the
    server's ``Retry-After``) decides the waits between retries.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60,
        retries: int = 2,
        backoff_s: float | None = None,
    ) -> None:
        if backoff_s is not None:
            warnings.warn(
                "OpenAICompatGenerator(backoff_s=...) is ignored: the openai client waits as the "
                "server's Retry-After asks, or with its own exponential backoff; drop the argument",
                DeprecationWarning,
                stacklevel=2,
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai-compat:{model}"
        self.timeout_s = timeout_s
        self.retries = retries
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or _NO_KEY,
            timeout=timeout_s,
            max_retries=retries,
            http_client=_TimeoutsEndTheCall(timeout=timeout_s),
        )

    def close(self) -> None:
        self._client.close()

    # -- protocol ------------------------------------------------------------------------------

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Generation:
        start = time.perf_counter()
        with self._errors(not_json="is not JSON"):
            reply = self._client.chat.completions.create(
                **self._request(messages, max_tokens, temperature, stop), stream=False
            )
        try:
            choice = reply.choices[0]
            text = choice.message.content
        except (IndexError, AttributeError, TypeError) as exc:
            raise self._malformed("has no choices[0].message.content", exc) from exc
        if not isinstance(text, str):
            raise self._malformed("has a non-text choices[0].message.content")
        usage = reply.usage  # optional in the protocol; Ollama and vLLM send it
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        return generation(text, prompt_tokens, completion_tokens, start, choice.finish_reason)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Iterator[str]:
        """Yield the ``delta.content`` of each event; the stream must end with a finish reason."""
        deadline = Deadline(self.timeout_s)
        finished = False
        with self._errors(not_json="streamed an event that is not JSON"):
            events = self._client.chat.completions.create(
                **self._request(messages, max_tokens, temperature, stop), stream=True
            )
            with events:
                kind = events.response.headers.get("content-type", "")
                if not kind.startswith("text/event-stream"):
                    raise self._malformed(
                        f"to a streaming request is {kind or 'untyped'}, not server-sent events"
                    )
                for chunk in events:
                    if deadline.passed():
                        raise self._timeout()
                    if not chunk.choices:
                        continue  # a usage-only chunk
                    try:
                        choice = chunk.choices[0]
                        piece = choice.delta.content
                    except (AttributeError, TypeError) as exc:
                        raise self._malformed("streamed an event without choices[0].delta", exc) from exc
                    if isinstance(piece, str) and piece:
                        yield piece
                    finished = finished or choice.finish_reason is not None
        if not finished:  # the server stopped part-way: what came may be a cut-off answer
            raise self._malformed(
                "ended before its last event (a finish_reason, then `data: [DONE]`), "
                "so the answer may be cut off; llama-cpp-python's server does this when another "
                "request arrives: run it with --interrupt_requests False"
            )

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        """One-token completion with ``top_logprobs``; a candidate (bare or space-prefixed)
        absent from the server's top 20 gets ``-inf``."""
        with self._errors(not_json="is not JSON"):
            reply = self._client.chat.completions.create(
                **self._request(messages, 1, 0.0, ()), stream=False, logprobs=True, top_logprobs=_TOP_LOGPROBS
            )
        try:
            logprobs = reply.choices[0].logprobs
            content = logprobs.content if logprobs is not None else None
            if not content:
                raise GeneratorError(
                    f"{self.base_url} returned no logprobs for model {self.model}; this server does not "
                    "support logprobs: use one that does (vLLM, llama.cpp server) or the llama.cpp backend"
                )
            top = {str(t.token): float(t.logprob) for t in content[0].top_logprobs}
        except (IndexError, AttributeError, TypeError, ValueError) as exc:
            raise self._malformed("has no choices[0].logprobs.content[0].top_logprobs", exc) from exc
        return {c: logsumexp([top[form] for form in candidate_forms(c) if form in top]) for c in candidates}

    def fingerprint(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": "openai-compatible",
            "base_url": self.base_url,
            "model": self.model,
        }

    # -- the client's errors as medcite's ------------------------------------------------------

    def _request(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, stop: Sequence[str]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if stop:
            request["stop"] = list(stop)
        return request

    @contextmanager
    def _errors(self, *, not_json: str) -> Iterator[None]:
        """Turn the client's exceptions (and a body that is not JSON) into medcite's errors."""
        try:
            yield
        except openai.APITimeoutError as exc:  # before APIConnectionError: it is a subclass
            raise self._timeout() from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise GeneratorError(
                f"cannot connect to {self.base_url} ({type(cause).__name__}: {cause}) after "
                f"{self.retries + 1} attempts; check the base URL and that the server is running"
            ) from exc
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except openai.APIError as exc:  # an error event inside a stream
            raise GeneratorError(
                f"{self.base_url} reported an error{_detail(exc.body)}; check the server's log"
            ) from exc
        except ValueError as exc:  # the body (or one event) does not parse as JSON
            raise self._malformed(not_json, exc) from exc

    def _status_error(self, exc: openai.APIStatusError) -> GeneratorError:
        url, status = f"{self.base_url}/chat/completions", exc.status_code
        problem = f"HTTP {status}{_detail(exc.body)}"
        if status in _RETRIED or status >= 500:
            return GeneratorError(
                f"{url} failed after {self.retries + 1} attempts: {problem}; check that the server is "
                "running, has loaded its model and is not overloaded"
            )
        advice = "check the API key" if status in {401, 403} else "check the model name and settings"
        return GeneratorError(f"{url} refused the request: {problem}; {advice}")

    def _malformed(self, what: str, exc: Exception | None = None) -> GeneratorError:
        cause = f" ({type(exc).__name__})" if exc else ""
        return GeneratorError(
            f"the response of {self.base_url} (model {self.model}) {what}{cause}; "
            "is it an OpenAI-compatible server?"
        )

    def _timeout(self) -> GeneratorTimeout:
        return GeneratorTimeout(
            f"{self.base_url} did not answer within {self.timeout_s} s; "
            "raise timeout_s or check the server's load"
        )


def _detail(body: object) -> str:
    """The server's own short explanation, if it gave one (capped: it is shown to users)."""
    message = body.get("message") if isinstance(body, dict) else body
    return f": {str(message)[:200]}" if message else ""
