"""medcite inside a LangChain app: the retriever and the chain as langchain-core objects."""

import pytest
from langchain_core.runnables import RunnableLambda

from core.types import Answer, Citation, Hit
from rag.langchain import MedciteRetriever, as_runnable, as_streaming_runnable
from tests.helpers import make_chunk

CHUNK = make_chunk(
    "open-medicine:af#0",
    "Use CHA2DS2-VASc to decide.",
    title="AF guideline",
    section=("Anticoagulation",),
    source="open-medicine",
    url="https://doi.org/x",
    license="MIT",
    start=10,
    end=40,
)


class OneHit:
    name = "fixed"

    def retrieve(self, query, k, filters=None):
        return [Hit(chunk=CHUNK, score=0.9, rank=1, retriever="hybrid")][:k]


class FakePipeline:
    def answer(self, question, closed_book=False):
        return Answer(
            question=question,
            text="Use CHA2DS2-VASc [1].",
            mode="rag",
            citations=(Citation.from_chunk(1, CHUNK, support=0.8),),
        )

    def stream(self, question):
        yield "Use "
        yield "CHA2DS2-VASc [1]."
        yield self.answer(question)


def test_retriever_returns_documents_with_provenance_and_composes_in_lcel():
    retriever = MedciteRetriever(retriever=OneHit(), k=3)
    docs = retriever.invoke("anticoagulation in AF")
    assert len(docs) == 1 and docs[0].page_content == "Use CHA2DS2-VASc to decide."
    meta = docs[0].metadata
    assert meta["chunk_id"] == "open-medicine:af#0" and meta["url"] == "https://doi.org/x"
    assert (meta["start"], meta["end"], meta["score"]) == (10, 40, 0.9)
    chain = retriever | RunnableLambda(lambda ds: " | ".join(d.metadata["title"] for d in ds))
    assert chain.invoke("AF") == "AF guideline"


def test_chain_runnable_returns_cited_answer_dict():
    result = as_runnable(FakePipeline()).invoke({"question": "Which score?"})
    assert result["answer"] == "Use CHA2DS2-VASc [1]." and result["mode"] == "rag"
    assert result["citations"][0]["chunk_id"] == "open-medicine:af#0"
    assert result["citations"][0]["support"] == 0.8
    with pytest.raises(ValueError, match="question"):
        as_runnable(FakePipeline()).invoke({"query": "no"})


def test_streaming_runnable_streams_text_then_the_answer():
    items = list(as_streaming_runnable(FakePipeline()).stream("Which score?"))
    assert items[:2] == ["Use ", "CHA2DS2-VASc [1]."]
    assert items[-1]["citations"][0]["marker"] == 1


def test_streaming_runnable_over_a_real_pipeline_never_yields_an_unsupported_sentence():
    from rag.pipeline import Pipeline
    from rag.rerank.identity import IdentityReranker
    from tests.helpers import ScriptedVerifier, WordGenerator, fake_profile

    good, bad = "CHA2DS2-VASc guides anticoagulation [1].", "The dose is 200 mg every 2 weeks [1]."
    pipeline = Pipeline(
        OneHit(),
        IdentityReranker(),
        WordGenerator(f"{good} {bad}"),
        verifier=ScriptedVerifier(unsupported=["200 mg"]),
        profile=fake_profile(),
    )
    *pieces, final = as_streaming_runnable(pipeline).stream("Which score guides anticoagulation?")
    assert pieces == [good] and final["answer"] == good and final["mode"] == "rag"
    assert [s["status"] for s in final["sentences"]] == ["shown", "removed"]
    assert as_runnable(pipeline).invoke("Which score guides anticoagulation?")["answer"] == good
