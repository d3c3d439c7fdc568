"""LangChain adapters (extra ``langchain``): medcite as a ``BaseRetriever`` and as a ``Runnable``.

    from rag.langchain import MedciteRetriever, as_runnable
    retriever = MedciteRetriever(retriever=hybrid, k=5)      # drop-in for any LangChain chain
    chain = as_runnable(pipeline)                            # "question" -> answer dict

Documents carry the chunk's full provenance in ``metadata`` (chunk id, title, section, source,
URL, licence, span) plus the retrieval score, so citations survive a LangChain app. The chain
runnables go through ``Pipeline.answer`` / ``Pipeline.stream``, so the support gate applies as
everywhere: the streaming runnable yields verified sentences one at a time, never one the gate
removed, and its last item (the answer dict) has the same text they add up to.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from core.errors import require

require("langchain_core", package="langchain-core", extra="langchain")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableGenerator, RunnableLambda  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

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
