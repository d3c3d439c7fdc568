"""Run a blocking ``Pipeline.stream`` in a worker thread and consume it from async code.

The event loop stays free for retrieval and health checks while the model works. A client that
disconnects sets the cancel flag. The pipeline is handed the flag's ``is_set`` and asks it after
every generated token, also while it holds a sentence back for verification (nothing reaches the
worker then), so generation stops at the next token and the model is released for the next
request. (Reranking runs to its end before the first token, so a cancel during reranking takes
effect once it finishes.)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

from starlette.requests import Request

_END = object()


class ClientGone(Exception):
    """The client closed the connection; nothing more will be sent."""


class PipelineRun:
    def __init__(self, make_stream: Callable[[Callable[[], bool]], Iterator[Any]]) -> None:
        """``make_stream(cancelled)`` starts the pipeline's stream; ``cancelled()`` turns True
        once the client has gone."""
        self._make_stream = make_stream
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.cancel = threading.Event()
        self._done: asyncio.Future[None] | None = None

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._done = loop.run_in_executor(None, self._work)

    def _put(self, kind: str, value: Any) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (kind, value))

    def _work(self) -> None:
        stream: Any = None
        try:
            stream = self._make_stream(self.cancel.is_set)
            for item in stream:
                if self.cancel.is_set():
                    break
                self._put("item", item)
        except BaseException as exc:  # noqa: BLE001  (handed to the async side, which re-raises it)
            self._put("error", exc)
        finally:
            if stream is not None and hasattr(stream, "close"):
                stream.close()
            self._put("end", _END)

    async def next(self, request: Request | None = None, poll_s: float = 0.5) -> tuple[str, Any]:
        """The next ("item", value) or ("end", None); re-raises the worker's exception.

        While waiting, checks every ``poll_s`` whether the client has gone; if so, cancels.
        """
        while True:
            try:
                kind, value = await asyncio.wait_for(self._queue.get(), timeout=poll_s)
            except TimeoutError:
                if request is not None and await request.is_disconnected():
                    self.cancel.set()
                    raise ClientGone from None
                continue
            if kind == "error":
                raise value
            return kind, value

    def when_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the event loop once the worker thread has finished."""
        if self._done is None:
            callback()
        else:
            self._done.add_done_callback(lambda _: callback())

    async def stop(self) -> None:
        """Ask the worker to stop and wait until it has (so the model is free afterwards)."""
        self.cancel.set()
        if self._done is not None:
            await asyncio.shield(self._done)
