"""The README's questions through the default chain with the real embedder, relevance and quote
models, over the guidelines that answer them and their neighbours (a VTE guideline's warfarin
lines, the sepsis guidelines): the key fact, and nothing from another guideline beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.paths import Paths
from corpora.sources.open_medicine import packaged_guidelines_dir
from rag.assemble import assemble
from rag.indexing import build_from_cli
from rag.profile import default_profile

pytestmark = pytest.mark.e2e

GUIDELINES = ("acc_aha_af_2023", "sepsis3_2016", "ssc_sepsis_2021", "ash_vte_2020", "wells_pe_2000")
# question (README, Makefile's demo) -> (what the answer states, the guideline every line is from)
QUESTIONS = {
    "What are the qSOFA criteria?": (("22 breaths per minute", "GCS) < 15", "100 mmHg"), "sepsis3_2016"),
    "What INR should be targeted on warfarin for atrial fibrillation?": (
        ("INR is 2.0–3.0",),
        "acc_aha_af_2023",
    ),
    "Which score is used to decide on anticoagulation in atrial fibrillation?": (
        ("CHA2DS2-VASc",),
        "acc_aha_af_2023",
    ),
}


def guidelines_folder(root: Path) -> Path:
    """A copy of the packaged guidelines' registry naming only ``GUIDELINES`` (their content linked)."""
    packaged = packaged_guidelines_dir()
    registry = json.loads((packaged / "registry.json").read_text(encoding="utf-8"))
    (root / "content").mkdir(parents=True)
    (root / "registry.json").write_text(json.dumps([g for g in registry if g["id"] in GUIDELINES]))
    for gid in GUIDELINES:
        (root / "content" / gid).symlink_to(packaged / "content" / gid)
    return root


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    data = tmp_path_factory.mktemp("readme-data")
    paths = Paths.from_env().model_copy(update={"data_dir": data})
    build_from_cli(
        paths, sources=["open-medicine"], path=guidelines_folder(data / "guidelines"), progress=False
    )
    assembled = assemble(default_profile(), paths)
    yield assembled.pipeline
    assembled.close()


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_the_readme_question_is_answered_with_its_key_fact_and_nothing_beside_it(chain, question):
    facts, guideline = QUESTIONS[question]
    answer = chain.answer(question)
    assert answer.outcome == "answer", answer.text
    assert all(fact in answer.text for fact in facts), answer.text
    assert "MCP" not in answer.text and "calculate_" not in answer.text  # no tool advert quoted
    assert {c.doc_id.split("/")[0] for c in answer.citations} == {f"open-medicine:{guideline}"}, answer.text
    first_seen = list(dict.fromkeys(c.marker for c in answer.citations))
    assert first_seen == list(range(1, len(first_seen) + 1))  # numbered in reading order
