"""A generator behind any OpenAI-compatible chat server: vLLM, Ollama, llama.cpp's server, ...

Only ``POST {base_url}/chat/completions`` is used (``base_url`` includes ``/v1``). Connection
errors, 429 and 5xx are retried with exponential backoff (a server still loading its model, or a
busy one); other 4xx are the caller's mistake and fail at once. Error messages name the server
and what was wrong with its answer, never the prompt (it may hold a patient's question).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from core.errors import GeneratorError, GeneratorTimeout
from core.types import Generation, Message
from rag.generate.backend import Deadline, candidate_forms, chat_messages, generation, logsumexp

__all__ = ["OpenAICompatGenerator"]

_TOP_LOGPROBS = 20  # the most OpenAI (and vLLM) allow


class OpenAICompatGenerator:
    """A :class:`rag.protocols.Generator` over HTTP; thread-safe (one pooled ``httpx.Client``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60,
        retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai-compat:{model}"
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

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
        body = self._json(self._post(self._payload(messages, max_tokens, temperature, stop), stream=False))
        try:
            choice = body["choices"][0]
            text = choice["message"]["content"]
            usage = body.get("usage") or {}  # optional in the protocol; Ollama and vLLM send it
            prompt_tokens, completion_tokens = (
                int(usage.get("prompt_tokens", 0)),
                int(usage.get("completion_tokens", 0)),
            )
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise self._malformed("has no choices[0].message.content", exc) from exc
        if not isinstance(text, str):
            raise self._malformed("has a non-text choices[0].message.content")
        return generation(text, prompt_tokens, completion_tokens, start, choice.get("finish_reason"))

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Iterator[str]:
        """Yield the ``delta.content`` of each server-sent event until ``data: [DONE]``."""
        deadline = Deadline(self.timeout_s)
        response = self._post(
            self._payload(messages, max_tokens, temperature, stop, stream=True), stream=True
        )
        try:
            kind = response.headers.get("content-type", "")
            if not kind.startswith("text/event-stream"):
                raise self._malformed(
                    f"to a streaming request is {kind or 'untyped'}, not server-sent events"
                )
            for line in response.iter_lines():
                if deadline.passed():
                    raise self._timeout()
                if not line.startswith("data:"):
                    continue  # blank separators, ": keep-alive" comments, event:/id: fields
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    return
                piece = self._delta(data)
                if piece:
                    yield piece
            # Without [DONE] the server stopped part-way: what came may be a cut-off answer.
            raise self._malformed("ended before `data: [DONE]`, so the answer may be cut off")
        except httpx.TimeoutException as exc:
            raise self._timeout() from exc
        except httpx.TransportError as exc:
            raise GeneratorError(f"{self.base_url} dropped the stream: {exc}") from exc
        finally:
            response.close()

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        """One-token completion with ``top_logprobs``; a candidate (bare or space-prefixed)
        absent from the server's top 20 gets ``-inf``."""
        payload = self._payload(messages, 1, 0.0, ())
        payload.update(logprobs=True, top_logprobs=_TOP_LOGPROBS)
        body = self._json(self._post(payload, stream=False))
        try:
            logprobs = body["choices"][0].get("logprobs")
            content = logprobs.get("content") if isinstance(logprobs, dict) else None
            if not content:
                raise GeneratorError(
                    f"{self.base_url} returned no logprobs for model {self.model}; this server does not "
                    "support logprobs: use one that does (vLLM, llama.cpp server) or the llama.cpp backend"
                )
            top = {str(t["token"]): float(t["logprob"]) for t in content[0]["top_logprobs"]}
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise self._malformed("has no choices[0].logprobs.content[0].top_logprobs", exc) from exc
        return {c: logsumexp([top[form] for form in candidate_forms(c) if form in top]) for c in candidates}

    def fingerprint(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": "openai-compatible",
            "base_url": self.base_url,
            "model": self.model,
        }

    # -- HTTP ----------------------------------------------------------------------------------

    def _payload(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        stop: Sequence[str],
        *,
        stream: bool = False,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": stream,
        }
        if stop:
            payload["stop"] = list(stop)
        return payload

    def _post(self, payload: dict[str, Any], *, stream: bool) -> httpx.Response:
        """POST with retries; returns a 2xx response (open, when streaming)."""
        url = f"{self.base_url}/chat/completions"
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                response = self._client.send(
                    self._client.build_request("POST", url, json=payload), stream=stream
                )
            except httpx.TimeoutException as exc:
                raise self._timeout() from exc
            except httpx.TransportError as exc:  # refused, reset, unresolvable: worth another try
                problem = f"cannot connect ({type(exc).__name__}: {exc})"
                continue
            if response.status_code < 400:
                return response
            detail = self._server_message(response)
            response.close()
            problem = f"HTTP {response.status_code}{detail}"
            if response.status_code != 429 and response.status_code < 500:
                raise GeneratorError(
                    f"{url} refused the request: {problem}; check the model name and settings"
                )
        raise GeneratorError(
            f"{url} failed after {self.retries + 1} attempts: {problem}; check that the server is running "
            "and has loaded its model"
        )

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except httpx.TimeoutException as exc:
            raise self._timeout() from exc
        except ValueError as exc:
            raise self._malformed(f"is not JSON ({len(response.content)} bytes)", exc) from exc
        if not isinstance(body, dict):
            raise self._malformed(f"is JSON but not an object ({type(body).__name__})")
        return body

    def _delta(self, data: str) -> str:
        try:
            piece = json.loads(data)["choices"][0].get("delta", {}).get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._malformed("streamed an event without choices[0].delta", exc) from exc
        return piece if isinstance(piece, str) else ""

    @staticmethod
    def _server_message(response: httpx.Response) -> str:
        """The server's own short explanation, if it gave one (capped: it is shown to users)."""
        try:
            response.read()
            error = response.json().get("error")
            message = error.get("message") if isinstance(error, dict) else error
        except (ValueError, AttributeError, httpx.HTTPError):
            return ""
        return f": {str(message)[:200]}" if message else ""

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
