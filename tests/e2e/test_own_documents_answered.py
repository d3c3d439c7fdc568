"""A user's own protocols (a Markdown table of value bands, an HTML page, a plain-text list) through
the default chain with the real embedder, relevance and quote models: every question whose answer
is a line or a row is answered with it, cited to its span; the rest are told nothing relevant."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.paths import Paths
from rag.assemble import assemble
from rag.indexing import build_from_cli
from rag.profile import default_profile, with_changes

pytestmark = pytest.mark.e2e

FILES = Path(__file__).parent / "user_docs"

# question -> (file, words the answer states); the line or row the protocol gives for it
ANSWERED = {
    "What insulin rate for a capillary glucose of 14 mmol/L?": (
        "insulin_scale.md",
        "12.0 to 15.9; Insulin rate (units/hour): 3",
    ),
    "Which bleep number for the outreach team?": ("escalation.html", "outreach team on 2345"),
    "What are the Sepsis Six?": ("sepsis_six.txt", "Measure hourly urine output"),
    "What should I give a conscious adult with a glucose of 3.2 who can swallow?": (
        "hypo.md",
        "15-20 g of quick-acting",
    ),
    "What is the enoxaparin prophylaxis dose if creatinine clearance is 25 mL/min?": (
        "vte.txt",
        "reduce enoxaparin to 20 mg",
    ),
}
NOT_IN_THEM = ("What is the vancomycin loading dose?", "What is the capital of France?", "hi")


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    paths = Paths.from_env().model_copy(update={"data_dir": tmp_path_factory.mktemp("user-docs")})
    build_from_cli(paths, sources=["user-docs"], path=FILES, name="mine", progress=False)
    assembled = assemble(with_changes(default_profile(), {"index": "mine"}), paths)
    yield assembled.pipeline
    assembled.close()


@pytest.mark.parametrize("question", list(ANSWERED))
def test_a_question_the_protocols_answer_is_answered_with_their_line(chain, question):
    file, words = ANSWERED[question]
    answer = chain.answer(question)
    assert answer.outcome == "answer", answer.text
    assert words in answer.text, answer.text
    cited = [c for c in answer.citations if c.doc_id == f"user-docs:{file}"]
    assert cited, answer.citations
    for citation in cited:  # each its line, word for word, at the file's own offsets (docs/sources.md)
        if not file.endswith(".html"):
            assert (FILES / file).read_text(encoding="utf-8")[citation.start : citation.end] == citation.quote


def test_the_html_citation_spans_the_extracted_text(chain):
    answer = chain.answer("Which bleep number for the outreach team?")
    citation = next(c for c in answer.citations if "2345" in c.quote)
    passage = next(h.chunk for h in answer.evidence if h.chunk.chunk_id == citation.chunk_id)
    # offsets index the page's visible text as extracted (docs/sources.md), not the file's bytes
    assert passage.text[citation.start - passage.start : citation.end - passage.start] == citation.quote
    assert "<b>" not in citation.quote and "2345" in citation.quote


@pytest.mark.parametrize("question", NOT_IN_THEM)
def test_a_question_they_do_not_answer_is_told_nothing_relevant(chain, question):
    answer = chain.answer(question)
    assert answer.outcome == "nothing_relevant", answer.text
    assert answer.read, "the passages read are on the record whatever the outcome"
