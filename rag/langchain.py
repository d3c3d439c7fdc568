"""LangChain adapters (extra ``langchain``): medcite as a ``BaseRetriever``, as a ``Runnable``,
and :class:`MedciteChatModel`, a chat model for a medcite server that keeps its citations. In
process, on a built index (``medcite index build``, ``medcite models fetch``)::

    from core.paths import Paths
    from rag.assemble import assemble
    from rag.langchain import MedciteRetriever, as_runnable
    from rag.profile import load_profile

    assembled = assemble(load_profile("default"), Paths.from_env())  # index, models, support gate
    retriever = MedciteRetriever(retriever=assembled.pipeline.retriever, k=5)  # any LangChain chain
    docs = retriever.invoke("What are the qSOFA criteria?")  # Documents with provenance and score
    chain = as_runnable(assembled.pipeline)  # str or {"question": str} -> the answer as a dict
    answer = chain.invoke({"question": "What are the qSOFA criteria?"})
    print(answer["outcome"], answer["answer"], [c["chunk_id"] for c in answer["citations"]])
    assembled.close()

Documents carry the chunk's full provenance in ``metadata`` (chunk id, title, section, source,
URL, licence, span) plus the retrieval score, so citations survive a LangChain app. The chain
runnables go through ``Pipeline.answer`` / ``Pipeline.stream``, so the support gate applies as
everywhere: the streaming runnable yields verified sentences only, and its last item (the answer
dict) has the same text they add up to.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from core.errors import require

require("langchain_core", package="langchain-core", extra="langchain")

from langchain_core.callbacks import (  # noqa: E402
    CallbackManagerForLLMRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ChatMessage  # noqa: E402
from langchain_core.messages.ai import UsageMetadata  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableGenerator, RunnableLambda  # noqa: E402
from pydantic import ConfigDict, PrivateAttr, SecretStr  # noqa: E402

from core.types import Answer, Filters, Hit  # noqa: E402
from rag.render import answer_to_dict  # noqa: E402


def hit_to_document(hit: Hit) -> Document:
    metadata = {**hit.chunk.to_json(), "score": hit.score, "rank": hit.rank, "retriever": hit.retriever}
    text = metadata.pop("text")
    return Document(page_content=text, metadata=metadata, id=hit.chunk.chunk_id)


class MedciteRetriever(BaseRetriever):
    """A LangChain retriever over any medcite ``Retriever`` (bm25, dense, hybrid)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any
    k: int = 5
    filters: Filters | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [hit_to_document(h) for h in self.retriever.retrieve(query, self.k, self.filters)]


def _question(value: str | Mapping[str, Any]) -> str:
    if isinstance(value, str):
        return value
    if "question" in value:
        return str(value["question"])
    raise ValueError("the medcite runnable takes a question string or a mapping with a 'question' key")


def as_runnable(pipeline: Any, *, closed_book: bool = False) -> RunnableLambda[Any, dict[str, Any]]:
    """The answering chain as a Runnable: input ``str`` or ``{"question": str}``, output a dict."""

    def run(value: str | Mapping[str, Any]) -> dict[str, Any]:
        return answer_to_dict(pipeline.answer(_question(value), closed_book=closed_book))

    return RunnableLambda(run, name="medcite")


def as_streaming_runnable(pipeline: Any) -> RunnableGenerator[Any, Any]:
    """Streams the answer a verified sentence at a time (``str``) and ends with the answer dict."""

    def run(inputs: Iterator[Any]) -> Iterator[Any]:
        for value in inputs:
            for item in pipeline.stream(_question(value)):
                yield answer_to_dict(item) if isinstance(item, Answer) else item

    return RunnableGenerator(run, name="medcite-stream")


MEDCITE_FIELDS = ("citations", "evidence", "medcite")  # what medcite's server adds to OpenAI's shape
_ROLES = {"system": "system", "human": "user", "ai": "assistant"}
_NO_KEY = "no-key"  # a development server takes any key; never OPENAI_API_KEY from the environment


class MedciteChatModel(BaseChatModel):
    """A LangChain chat model for a running ``medcite serve`` (``key``: one of its
    ``MEDCITE_API_KEYS``) that keeps its ``citations``, ``evidence`` and ``medcite`` fields::

        chat = MedciteChatModel(base_url="http://127.0.0.1:8000/v1", api_key=key, model="default")
        chat.invoke("What are the qSOFA criteria?").response_metadata["citations"]

    The server's OpenAI-format replies (``POST /v1/chat/completions``) add those fields and
    ``ChatOpenAI`` drops them. Here they land in the message's ``response_metadata`` (not
    ``additional_kwargs``, which LangChain sends back to a model), for ``invoke``/``ainvoke`` and
    on the streamed chunk that carries them; token counts are ``usage_metadata``. It is a
    ``BaseChatModel`` on the ``openai`` client rather than a ``ChatOpenAI`` subclass, which could
    keep the fields only through private hooks that follow langchain-openai's releases, and would
    add langchain-openai and tiktoken for features medcite's server does not offer. Client errors
    are the ``openai`` client's own.

    ``model`` is a served profile (``GET /v1/models``); ``filters`` (``{"sources": [...],
    "sections": [...]}``) and ``closed_book`` are medcite's request extensions.
    """

    base_url: str = "http://127.0.0.1:8000/v1"
    api_key: SecretStr | None = None
    model: str = "default"
    temperature: float | None = None
    max_tokens: int | None = None
    filters: dict[str, list[str]] | None = None
    closed_book: bool = False
    timeout: float = 120.0
    max_retries: int = 2
    _openai: Any = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "medcite"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "closed_book": self.closed_book}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._client().chat.completions.create(**self._request(messages, stop, kwargs))
        choice = reply.choices[0]
        metadata = {"model_name": reply.model, "finish_reason": choice.finish_reason}
        message = AIMessage(
            content=choice.message.content or "",
            response_metadata={**metadata, **medcite_fields(reply.model_extra)},
            usage_metadata=_usage(reply.usage),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        request = {**self._request(messages, stop, kwargs), "stream_options": {"include_usage": True}}
        with self._client().chat.completions.create(**request, stream=True) as events:
            for event in events:
                choice = event.choices[0] if event.choices else None
                piece = (choice.delta.content or "") if choice is not None else ""
                metadata = medcite_fields(event.model_extra)
                if choice is not None and choice.finish_reason:  # once: string values add up
                    metadata.update(model_name=event.model, finish_reason=choice.finish_reason)
                message = AIMessageChunk(
                    content=piece, response_metadata=metadata, usage_metadata=_usage(event.usage)
                )
                chunk = ChatGenerationChunk(message=message)
                if run_manager is not None and piece:
                    run_manager.on_llm_new_token(piece, chunk=chunk)
                yield chunk

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, options: dict[str, Any]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": [_openai_message(m) for m in messages]}
        for name in ("temperature", "max_tokens"):
            value = options.get(name, getattr(self, name))
            if value is not None:
                request[name] = value
        if stop:
            request["stop"] = stop
        extensions: dict[str, Any] = {"filters": self.filters} if self.filters else {}
        if self.closed_book:
            extensions["closed_book"] = True
        return {**request, "extra_body": extensions} if extensions else request

    def _client(self) -> Any:
        if self._openai is None:
            openai = require("openai", package="openai", extra="langchain")
            key = self.api_key.get_secret_value() if self.api_key else _NO_KEY
            self._openai = openai.OpenAI(
                base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=self.max_retries
            )
        return self._openai


def medcite_fields(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The medcite additions found among a response's (or chunk's) fields beyond OpenAI's."""
    return {name: extra[name] for name in MEDCITE_FIELDS if extra and name in extra}


def _usage(usage: Any) -> UsageMetadata | None:
    if usage is None:
        return None
    prompt, completion = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
    return UsageMetadata(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion)


def _openai_message(message: BaseMessage) -> dict[str, str]:
    """A LangChain message as an OpenAI chat turn: system, user or assistant, text only."""
    role = message.role if isinstance(message, ChatMessage) else _ROLES.get(message.type)
    if role is None:
        raise ValueError(
            f"a medcite server reads system, user and assistant turns, not {message.type!r} messages "
            "(it calls no tools); leave them out of the chat"
        )
    content = message.content
    if not isinstance(content, str):  # content blocks: keep the text ones
        content = "\n".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or part.get("type") == "text"
        )
    return {"role": role, "content": content}
