"""medcite inside a LangChain app: the retriever and the chain as langchain-core objects."""

import re
import textwrap
from pathlib import Path

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


def _python_blocks(text: str) -> list[str]:
    """README's fenced Python blocks, and a docstring's ``::`` blocks (indented four spaces)."""
    fenced = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    literal = [textwrap.dedent(b) for b in re.findall(r"::\n\n((?:    .*\n|\n)+)", text)]
    return fenced + literal


@pytest.mark.parametrize("where", ["README.md", "rag/langchain.py"])
def test_the_documented_in_process_example_runs(where, bm25_paths, monkeypatch, capsys):
    """The example constructing MedciteRetriever and as_runnable(pipeline), run as written on a
    test index named default; only the models are swapped: the profile for a BM25 one without
    the trained reranker, the generator for a scripted one."""
    import rag.assemble
    import rag.profile
    from rag.profile import load_profile, with_changes
    from tests.helpers import WordGenerator

    text = (Path(__file__).resolve().parents[3] / where).read_text(encoding="utf-8")
    [example] = [b for b in _python_blocks(text) if "as_runnable(assembled.pipeline)" in b]
    bm25 = with_changes(
        load_profile("default"),
        {
            "retrieval": {"mode": "bm25"},
            "rerank": {"backend": "none", "threshold": None},
            "quote": {"threshold": None},
        },
    )
    monkeypatch.setattr(rag.profile, "load_profile", lambda name="default": bm25)
    reply = "The qSOFA criteria are respiratory rate, mental status and systolic pressure [1]."
    monkeypatch.setattr(rag.assemble, "make_generator", lambda config, paths: WordGenerator(reply))
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(bm25_paths.data_dir))
    namespace: dict[str, object] = {}
    exec(compile(example, where, "exec"), namespace)
    answer = namespace["answer"]
    assert isinstance(answer, dict) and answer["question"] == "What are the qSOFA criteria?"
    assert answer["outcome"] in {"answer", "closest_lines", "nothing_relevant"}
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith(answer["outcome"])  # the example's last line
    docs = namespace.get("docs")  # the docstring keeps the Documents, README prints one line each
    ids = (
        [d.metadata["chunk_id"] for d in docs]
        if isinstance(docs, list)
        else [x.split()[0] for x in printed[:-1]]
    )
    assert len(ids) == 5 and all(i.startswith("open-medicine:") for i in ids)
