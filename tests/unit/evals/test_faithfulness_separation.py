"""The faithfulness-separation set and report: construction rules, the judged step, the statistics.

The judge is a fake here (the set's rules and the report's arithmetic are the subject); the real
judge's numbers are in docs/results/eval/faithfulness-separation/.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from core.types import Message
from evals.engine.judge.answer_quality import CONTEXT_MAX_CHARS, NLI_USER, YES_NO_SYSTEM
from evals.engine.judge.cache import CachedJudge, JudgeCache
from evals.studies.faithfulness.labelled import (
    Claim,
    LabelledItem,
    _Row,
    build_items,
    candidate_rows,
    content_words,
    edited_claims,
    entity_shape,
    is_entity_like,
    is_supported,
    read_items,
    write_items,
)
from evals.studies.faithfulness.page import markdown, write_report
from evals.studies.faithfulness.report import (
    at_thresholds,
    auc_interval,
    below_source,
    best_threshold,
    by_rule,
    claim_rows,
    cross_fitted,
    margin_summary,
    summarise,
    verdict_metrics,
    worst_cases,
)
from evals.studies.faithfulness.separation import judge_claim, read_scores, score_items

# --- construction rules ---------------------------------------------------------------------------


def test_content_words_drop_stop_words_and_plural_s_but_keep_short_numbers() -> None:
    assert content_words("The receptors of IL-6 are in 2 cells") == ["receptor", "6", "2", "cell"]


def test_supported_needs_every_number_and_all_but_one_content_word() -> None:
    passage = (
        "Metformin is the first-line drug for type 2 diabetes in adults with obesity and normal kidneys."
    )
    assert is_supported("Metformin is the first-line drug for type 2 diabetes.", passage)
    assert not is_supported("Metformin is the first-line drug for type 1 diabetes.", passage)  # number
    # "children" missing: 1 of 6 content words is more than 10%
    assert not is_supported("Metformin is the first-line drug for diabetes in children.", passage)
    long_claim = "Metformin first-line drug type 2 diabetes adults obesity normal kidneys elderly."
    assert is_supported(long_claim, passage)  # 1 of 11 missing ("elderly")


def test_a_hedged_negation_and_a_number_the_passage_holds_are_not_false_claims() -> None:
    made = edited_claims("Aspirin may reduce the risk by 10 percent.", "risk fell by 20 percent", (), None)
    assert "negation" not in made  # "may not reduce" does not contradict "may reduce"
    assert "number" not in made  # 10 -> 20, and the passage says 20
    made = edited_claims("Aspirin is an inhibitor of COX in 3 ways.", "no numbers here", (), None)
    assert made["negation"] == "Aspirin is not an inhibitor of COX in 3 ways."
    assert made["number"] == "Aspirin is an inhibitor of COX in 6 ways."
    assert made["antonym"] == "Aspirin is an activator of COX in 3 ways."


def test_entities_keep_their_shape_and_phrases_or_numbers_are_not_entities() -> None:
    assert entity_shape("BRCA1") == entity_shape("TNF") == "symbol"
    assert entity_shape("dementia") == entity_shape("Tocilizumab") == "words"
    assert is_entity_like("HIV") and is_entity_like("normal pressure hydrocephalus")
    assert not is_entity_like("By intracellular DNA")
    assert not is_entity_like("2.7%") and not is_entity_like("9th")
    assert not is_entity_like("Granzyme B is a serine protease secreted by NK cells")


def _row(
    qid: str,
    supported: tuple[str, ...],
    contexts: tuple[str, ...],
    exact: tuple[str, ...] = (),
    pmids: tuple[str, ...] = (),
) -> _Row:
    return _Row(qid, f"question {qid}?", contexts, exact, frozenset(pmids or (qid,)), supported)


ROWS = [
    _row(
        "q1",
        ("BRCA1 mutations increase the risk of breast cancer.",),
        ("BRCA1 mutations increase the risk of breast cancer in women.",),
        exact=("BRCA1",),
    ),
    _row(
        "q2",
        ("Warfarin is an inhibitor of vitamin K epoxide reductase.",),
        ("Warfarin is an inhibitor of vitamin K epoxide reductase (VKORC1).",),
        exact=("VKORC1",),
    ),
    _row(
        "q3",
        ("Insulin lowers blood glucose within 15 minutes.",),
        ("Insulin lowers blood glucose within 15 minutes of injection.",),
        exact=("TP53",),
    ),
]


def test_build_items_labels_by_rule_and_is_deterministic() -> None:
    items = build_items(ROWS, 3, seed=5)
    assert build_items(ROWS, 3, seed=5) == items
    claims = {c.claim_id: c for item in items for c in item.claims}
    assert claims["q1:0:supported"].label == 1 and claims["q1:0:supported"].edit == ""
    assert all(c.label == 0 for c in claims.values() if c.rule != "supported")
    assert "q1:0:negation" not in claims  # no auxiliary verb to negate: the rule does not apply
    assert claims["q2:0:negation"].text == "Warfarin is not an inhibitor of vitamin K epoxide reductase."
    assert claims["q2:0:negation"].edit == "'' -> 'not'"
    assert claims["q1:0:antonym"].text == "BRCA1 mutations decrease the risk of breast cancer."
    # the entity swap takes another item's exact answer of the same shape, absent from q1's passage
    entity = claims["q1:0:entity"]
    assert entity.text.startswith(("VKORC1 ", "TP53 ")) and entity.edit.startswith("'BRCA1' -> ")
    assert claims["q3:0:number"].text == "Insulin lowers blood glucose within 30 minutes."
    unrelated = claims["q1:0:unrelated"]
    assert unrelated.edit.startswith("from q") and unrelated.text in (
        ROWS[1].supported[0],
        ROWS[2].supported[0],
    )


def test_items_sharing_a_pubmed_id_never_lend_each_other_unrelated_claims() -> None:
    rows = [
        _row("a", ("Aspirin irreversibly inhibits platelet cyclooxygenase.",), ("x",), pmids=("1",)),
        _row("b", ("Statins lower LDL cholesterol concentrations.",), ("y",), pmids=("1",)),
        _row("c", ("Heparin potentiates antithrombin activity.",), ("z",), pmids=("2",)),
    ]
    items = {item.qid: item for item in build_items(rows, 3, seed=1)}
    unrelated = next(c for c in items["a"].claims if c.rule == "unrelated")
    assert unrelated.edit == "from c"


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_candidate_rows_leave_out_task_11b_and_its_duplicates(tmp_path: Path) -> None:
    root = tmp_path / "bioasq_from_mirage"
    root.mkdir()
    ideal = ["Yes. Milvexian is an oral inhibitor of factor XIa in clinical studies."]
    question = {
        "type": "yesno",
        "exact_answer": "yes",
        "ideal_answer": ideal,
        "pmids": ["1"],
        "snippet_ids": ["S1", "S2"],
    }
    made = [
        ("a", "Is milvexian an inhibitor?", "Task9B"),
        ("b", "Is milvexian an inhibitor", "Task11B"),
        ("c", "Is milvexian oral?", "Task10B"),
        ("d", "Is milvexian new?", "Task11B"),
    ]
    _write_jsonl(
        root / "questions.jsonl",
        [
            {**question, "id": q, "body": body, "source_file": f"{task}GoldenEnriched/x"}
            for q, body, task in made
        ],
    )
    _write_jsonl(
        root / "snippet_corpus.jsonl",
        [
            {"_id": "S1", "pmid": "1", "section": "title", "text": "Milvexian in clinical studies."},
            {
                "_id": "S2",
                "pmid": "1",
                "section": "abstract",
                "text": "Milvexian is an oral inhibitor of factor XIa.",
            },
        ],
    )
    rows = candidate_rows(tmp_path, claims_per_item=2)
    assert [r.qid for r in rows] == ["c"]  # a duplicates 11B's b; b and d are 11B
    assert rows[0].contexts == (
        "Milvexian in clinical studies. Milvexian is an oral inhibitor of factor XIa.",
    )
    assert rows[0].supported == ("Milvexian is an oral inhibitor of factor XIa in clinical studies.",)


def test_the_set_round_trips_through_its_file(tmp_path: Path) -> None:
    items = build_items(ROWS, 3, seed=2)
    write_items(items, tmp_path / "claims.jsonl")
    assert read_items(tmp_path / "claims.jsonl") == items


# --- the judged step --------------------------------------------------------------------------------


class NegationJudge:
    """Says no to claims with "not", yes otherwise; records the messages it was shown."""

    name = "negation-judge"

    def __init__(self) -> None:
        self.seen: list[list[Message]] = []

    def next_token_logprobs(self, messages, candidates):
        self.seen.append(list(messages))
        claim = messages[-1].content.split("Statement: ")[1]
        yes, no = (math.log(0.1), math.log(0.6)) if " not " in claim else (math.log(0.7), math.log(0.2))
        return {"yes": yes, "Yes": yes - 1.0, "no": no, "No": -math.inf}

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        raise AssertionError("the NLI step never generates")

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        raise AssertionError("the NLI step never generates")

    def fingerprint(self):
        return {"name": self.name}


ITEM = LabelledItem("q", "Which drug?", tuple(f"passage {i} " + "x" * 2000 for i in range(7)), ())


def test_a_claim_is_judged_with_the_metrics_prompt_and_verdict_through_the_cache(tmp_path: Path) -> None:
    inner = NegationJudge()
    judge = CachedJudge(inner, JudgeCache(tmp_path / "judge.sqlite"))
    judged = judge_claim(judge, ITEM, "Metformin is first-line.")
    contexts = "\n\n".join(f"[{i}] {c[:CONTEXT_MAX_CHARS]}" for i, c in enumerate(ITEM.contexts[:5], 1))
    assert inner.seen == [
        [
            Message("system", YES_NO_SYSTEM),
            Message("user", NLI_USER.format(contexts=contexts, claim="Metformin is first-line.")),
        ]
    ]
    assert judged.margin == pytest.approx(math.log(0.7 + 0.7 / math.e) - math.log(0.2))
    assert judged.verdict is True
    assert judge.calls == 1 and judge.hits == 1  # the verdict's own call came from the cache
    negated = judge_claim(judge, ITEM, "Metformin is not first-line.")
    assert negated.margin == pytest.approx(math.log(0.1 + 0.1 / math.e) - math.log(0.6))
    assert negated.verdict is False
    judge.cache.close()


def test_scoring_resumes_without_rescoring_and_skips_a_torn_line(tmp_path: Path) -> None:
    items = build_items(ROWS, 3, seed=2)
    scores = tmp_path / "scores.jsonl"
    judge = CachedJudge(NegationJudge(), JudgeCache(tmp_path / "judge.sqlite"))
    total = sum(len(item.claims) for item in items)
    assert score_items(items, judge, scores) == total
    with scores.open("a", encoding="utf-8") as fh:
        fh.write('{"claim_id": "torn')
    assert len(read_scores(scores)) == total
    assert score_items(items, judge, scores) == 0
    judge.cache.close()


# --- the report ---------------------------------------------------------------------------------


def rows_of(spec: list[tuple[str, str, float, bool]]) -> list[dict[str, Any]]:
    """(qid, rule, margin, verdict) -> rows; claim ids point false claims at their source."""
    return [
        {
            "claim_id": f"{q}:0:{rule}",
            "qid": q,
            "rule": rule,
            "label": int(rule == "supported"),
            "edit": "",
            "margin": m,
            "verdict": v,
        }
        for q, rule, m, v in spec
    ]


ROWS_SCORED = rows_of(
    [
        ("a", "supported", 2.0, True),
        ("a", "negation", -1.0, False),
        ("a", "unrelated", 0.5, True),
        ("b", "supported", -0.05, False),
        ("b", "negation", 0.3, True),
        ("b", "number", -2.0, False),
    ]
)


def test_verdict_metrics_count_supported_as_positive() -> None:
    m = verdict_metrics([True, False, True, False, True, False], [1, 0, 0, 1, 0, 0])
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (1, 2, 1, 2)
    assert m["accuracy"] == 3 / 6 and m["precision"] == 1 / 3 and m["recall"] == 1 / 2
    assert m["false_caught"] == 2 / 4


def test_by_rule_shares_and_within_item_ranking() -> None:
    rules = by_rule(ROWS_SCORED)
    assert rules["supported"]["share_right"] == 1 / 2  # b's supported claim was rejected
    assert rules["negation"]["share_right"] == 1 / 2
    low, high = rules["negation"]["ci95"]
    assert low < 0.5 < high
    # negation margins -1.0, 0.3 against supported 2.0, -0.05: 3 of 4 pairs ordered right
    assert rules["negation"]["roc_auc_vs_supported"] == 3 / 4
    assert rules["negation"]["below_its_source"] == 1 / 2  # a: -1.0 < 2.0; b: 0.3 > -0.05
    assert below_source([], ROWS_SCORED) is None
    assert "antonym" not in rules


def test_auc_interval_brackets_the_point_and_is_one_for_perfect_separation() -> None:
    summary = summarise(ROWS_SCORED, resamples=300)
    low, high = summary["roc_auc_ci95"]
    assert low <= summary["roc_auc"] <= high
    assert summary["roc_auc"] == 6 / 8  # 8 supported-false pairs; 2.0 beats all 4, -0.05 beats 2 (-1.0, -2.0)
    perfect = auc_interval([3.0, 2.0, -1.0, -2.0], [1, 1, 0, 0], ["a", "b", "a", "b"], resamples=200)
    assert perfect == (1.0, 1.0)


def test_thresholds_fixed_tuned_and_tuned_on_the_other_half() -> None:
    at_zero, at_one = at_thresholds(ROWS_SCORED, [0.0, 1.0])
    # t = 0: accepts a's supported (2.0), a's unrelated (0.5), b's negation (0.3); rejects b's -0.05
    assert (at_zero["tp"], at_zero["fp"], at_zero["fn"], at_zero["tn"]) == (1, 2, 1, 2)
    assert at_zero["balanced_accuracy"] == (1 / 2 + 2 / 4) / 2
    assert (at_one["tp"], at_one["fp"]) == (1, 0) and at_one["balanced_accuracy"] == (1 / 2 + 1) / 2
    # on b alone the best cut accepts -0.05 and rejects -2.0 but not 0.3: t = -0.05, balanced 3/4
    assert best_threshold([r for r in ROWS_SCORED if r["qid"] == "b"]) == -0.05
    folds = cross_fitted(ROWS_SCORED, seed=3)
    assert [f["tuned_on_items"] for f in folds] == [1, 1] and {f["threshold"] for f in folds} == {-0.05, 2.0}


def test_margin_summary_counts_claims_decided_by_a_hair() -> None:
    s = margin_summary([-0.009, 0.05, 1.0, -3.0])
    assert s["claims"] == 4 and s["near_threshold"] == 2 / 4 and s["min"] == -3.0 and s["max"] == 1.0
    assert margin_summary([]) == {"claims": 0}


def test_worst_cases_are_the_lowest_supported_and_highest_false() -> None:
    worst = worst_cases(ROWS_SCORED, k=1)
    assert [w["claim_id"] for w in worst["supported_lowest"]] == ["b:0:supported"]
    assert [w["claim_id"] for w in worst["false_highest"]] == ["a:0:unrelated"]


def test_claim_rows_flag_supported_claims_copied_from_a_passage() -> None:
    items = build_items(ROWS, 3, seed=2)
    scores = {c.claim_id: {"claim_id": c.claim_id, "margin": 0.0} for item in items for c in item.claims}
    rows = {r["claim_id"]: r for r in claim_rows(items, scores)}
    assert rows["q1:0:supported"]["verbatim"] is True
    assert rows["q1:0:antonym"]["verbatim"] is False


def test_the_report_files_and_page(tmp_path: Path) -> None:
    claims = [Claim(r["claim_id"], r["qid"], r["rule"], r["label"], "t") for r in ROWS_SCORED]
    items = [LabelledItem(q, "?", ("ctx",), tuple(c for c in claims if c.qid == q)) for q in "ab"]
    scores = {r["claim_id"]: r for r in ROWS_SCORED}
    report = write_report(items, scores, tmp_path, "medcite study faithfulness-separation")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "claims.json",
        "margins.png",
        "report.json",
        "report.md",
    ]
    assert len(json.loads((tmp_path / "claims.json").read_text())) == 6
    page = (tmp_path / "report.md").read_text()
    assert f"**{report['roc_auc']:.3f}**" in page and "| negation | 0 | 2 | caught 50.0%" in page
    assert "Partial" not in page and "medcite study faithfulness-separation" in markdown(report)
