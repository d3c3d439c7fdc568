"""The robustness suite: each perturbation on hand-made and real items, the paired metrics on
fabricated records, and a run with perturbed copies end to end (scripted model, real BM25 index)."""

from __future__ import annotations

import json
import random

import pytest

from core.errors import ConfigError
from core.paths import Paths
from evals.engine.config import EvalConfig, load_config
from evals.engine.runner import run_eval
from evals.records import ItemRecord, read_records
from evals.robustness import base_dataset, item_rng, perturb_items
from evals.robustness.details import DETAILS, add_patient_details
from evals.robustness.diseases import synonym_map, usable
from evals.robustness.drugs import brand_generic_map, drug_swapper
from evals.robustness.metrics import answer_changed, pair_metrics, retrieval_effect, robustness_metrics
from evals.robustness.options import shuffle_options
from evals.robustness.terms import swap_terms, term_pattern
from evals.types import McqItem
from tests.helpers import LetterModel

ITEM = McqItem(
    dataset="medqa",
    qid="q1",
    question="A 54-year-old man with hypertension takes metformin daily. Which drug is most likely to help?",
    options={"A": "Lipitor", "B": "Metformin-induced lactic acidosis", "C": "Warfarin", "D": "Nothing"},
    answer="C",
)


def test_shuffle_moves_the_gold_letter_with_its_option_and_never_keeps_the_order():
    for seed in range(20):
        out = shuffle_options(ITEM, random.Random(seed))
        assert out is not None and list(out.options) == ["A", "B", "C", "D"]
        assert list(out.options.values()) != list(ITEM.options.values())
        assert out.options[out.answer] == "Warfarin"
        assert all(out.options[new] == ITEM.options[old] for new, old in out.meta["option_map"].items())
    two = McqItem("pubmedqa", "p", "Does it?", {"A": "yes", "B": "no"}, "A")
    swapped = shuffle_options(two, random.Random(0))
    assert swapped is not None and swapped.options == {"A": "no", "B": "yes"} and swapped.answer == "B"


def test_term_swap_is_whole_word_single_pass_and_keeps_sentence_capitals():
    mapping = {"metformin": "Glucophage", "glucophage": "metformin", "lipitor": "atorvastatin"}
    pattern = term_pattern(mapping)
    text, changes = swap_terms(
        "Metformin or glucophage? Not metformin-induced, not premetformin. Lipitor.", pattern, mapping
    )
    assert text == "Glucophage or metformin? Not metformin-induced, not premetformin. Atorvastatin."
    assert changes == ["Metformin -> Glucophage", "glucophage -> metformin", "Lipitor -> Atorvastatin"]


def test_drug_names_swap_both_ways_in_question_and_options():
    mapping = brand_generic_map()
    assert mapping["metformin"] == "Glucophage" and mapping["lipitor"] == "atorvastatin"
    assert len(mapping) >= 300  # 165 pairs, both directions
    out = drug_swapper()(ITEM, random.Random(0))
    assert out is not None and out.dataset == "medqa~drug-names" and out.answer == "C"
    assert "takes Glucophage daily" in out.question
    assert out.options["A"] == "Atorvastatin" and out.options["C"] == "Coumadin"
    assert out.options["B"] == "Metformin-induced lactic acidosis"  # a hyphenated word is not a name
    plain = McqItem(
        "medmcqa", "m", "Which nerve supplies the deltoid?", {"A": "Axillary", "B": "Radial"}, "A"
    )
    assert drug_swapper()(plain, random.Random(0)) is None


def test_disease_synonyms_come_from_the_ontology_and_skip_narrower_or_other_diseases():
    paths = Paths.from_env()
    mapping = synonym_map(paths.source_data / "disease_ontology")
    assert (
        mapping["myocardial infarction"] == "heart attack"
        and mapping["heart attack"] == "myocardial infarction"
    )
    assert "pneumonia" not in mapping  # its only EXACT synonym, "acute pneumonia", is narrower
    assert mapping.get("urinary tract infection") != "acute cystitis"
    assert not usable("influenza", "influenza with non-respiratory manifestation")
    assert not usable("hypertension", "HTN") and usable("myocardial infarction", "heart attack")


def test_patient_details_go_after_the_first_sentence_of_a_vignette_only():
    out = add_patient_details(ITEM, random.Random(1))
    assert out is not None
    first, rest = out.question.split(". ", 1)
    assert first == "A 54-year-old man with hypertension takes metformin daily"
    added = out.meta["changes"]
    assert len(added) == 2 and all(d in DETAILS for d in added)
    assert rest == " ".join(added) + " Which drug is most likely to help?"
    research = McqItem("pubmedqa", "p", "Is aspirin useful after stroke?", {"A": "yes", "B": "no"}, "A")
    assert add_patient_details(research, random.Random(1)) is None


def test_perturbed_copies_are_seeded_per_item():
    a = item_rng(0, "shuffle-options", ITEM).random()
    assert a == item_rng(0, "shuffle-options", ITEM).random() != item_rng(1, "shuffle-options", ITEM).random()
    assert base_dataset("medqa~drug-names") == ("medqa", "drug-names") and base_dataset("medqa") == (
        "medqa",
        None,
    )


def _rec(cond: str, ds: str, qid: str, pred: str, gold: str, option_map: dict | None = None) -> ItemRecord:
    extra = {"option_map": option_map} if option_map is not None else {}
    return ItemRecord(dataset=ds, qid=qid, condition=cond, gold=gold, pred=pred, extra=extra)


def test_answer_changed_maps_letters_back_to_the_original_options():
    original = _rec("c", "medqa", "1", "A", "A")
    moved = _rec("c", "medqa~shuffle-options", "1", "C", "C", {"A": "B", "B": "C", "C": "A"})
    assert not answer_changed(original, moved)  # C of the copy is A of the original
    assert answer_changed(
        original, _rec("c", "medqa~shuffle-options", "1", "A", "C", {"A": "B", "B": "C", "C": "A"})
    )
    assert answer_changed(original, _rec("c", "medqa~drug-names", "1", None, "A"))  # type: ignore[arg-type]


def test_pair_metrics_and_the_retrieval_effect_on_fabricated_records():
    ident = {"A": "A", "B": "B"}

    def arm(cond: str, kept: int) -> list[tuple[ItemRecord, ItemRecord]]:
        """10 items all right originally; the first ``kept`` copies still answer A, the rest B."""
        copies = [_rec(cond, "s~drug-names", str(i), "A" if i < kept else "B", "A", ident) for i in range(10)]
        return [(_rec(cond, "s", str(i), "A", "A"), copy) for i, copy in enumerate(copies)]

    rag, closed = arm("rag", 6), arm("cb", 9)
    m = pair_metrics(rag, n_originals=12)
    assert (m["n"], m["not_applicable"], m["accuracy_original"], m["accuracy_perturbed"]) == (10, 2, 1.0, 0.6)
    assert (m["right_to_wrong"], m["wrong_to_right"], m["flips"]["count"]) == (4, 0, 4)
    assert m["mcnemar_p"] == pytest.approx(0.125)
    e = retrieval_effect(rag, closed)
    assert (e["n"], e["only_closed_book_flipped"], e["only_rag_flipped"]) == (10, 0, 3)
    whole = robustness_metrics([r for pair in rag + closed for r in pair], baseline="cb")
    assert whole["by_condition"]["rag"]["s~drug-names"]["flips"]["count"] == 4
    assert whole["retrieval_effect"]["rag"]["s~drug-names"]["only_rag_flipped"] == 3


def test_a_run_pairs_each_copy_with_its_original_right_after_it(bm25_paths, tmp_path):
    grid = {"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [1], "closed_book": True}
    cfg = EvalConfig.model_validate(
        {
            "name": "robust",
            "profile": "fast",
            "seed": 0,
            "mcq": [{"dataset": "medqa", "n": 4}],
            "grid": grid,
            "robustness": [{"perturbation": "shuffle-options"}, {"perturbation": "patient-details"}],
        }
    )
    out = tmp_path / "run"
    run_eval(cfg, bm25_paths, out=out, progress=False, generator=LetterModel())
    records = list(read_records(out / "records.jsonl"))
    closed = [r for r in records if r.condition == "closed-book"]
    assert closed[0].dataset == "medqa" and closed[1].dataset.startswith("medqa~")
    assert closed[1].qid == closed[0].qid  # the copy runs right after its original
    shuffled = [r for r in closed if r.dataset == "medqa~shuffle-options"]
    assert len(shuffled) == 4 and all(r.extra["option_map"] for r in shuffled)
    metrics = json.loads((out / "metrics.json").read_text())["robustness"]
    shuffle = metrics["by_condition"]["closed-book"]["medqa~shuffle-options"]
    # the scripted model always answers B: any copy that moved B's option changes the answer
    moved = sum(r.extra["option_map"]["B"] != "B" for r in shuffled)
    assert shuffle["n"] == 4 and shuffle["flips"]["count"] == moved
    assert "rag/default/bm25/none/k=1" in metrics["retrieval_effect"]
    assert "## Robustness" in (out / "report.md").read_text()


def test_a_robustness_entry_must_name_mcq_sets_of_the_config(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        '[[mcq]]\ndataset = "medqa"\nn = 2\n[[robustness]]\nperturbation = "drug-names"\n'
        'datasets = ["medmcqa"]\n'
    )
    with pytest.raises(ConfigError, match="medmcqa"):
        load_config(path)
    path.write_text('[[mcq]]\ndataset = "medqa"\n[[robustness]]\nperturbation = "typos"\n')
    with pytest.raises(ConfigError, match="perturbation"):
        load_config(path)


def test_perturb_items_keeps_only_changed_items_in_order():
    paths = Paths.from_env()
    items = [ITEM, McqItem("medqa", "q2", "Which nerve supplies the deltoid?", {"A": "x", "B": "y"}, "A")]
    out = perturb_items(items, "drug-names", 0, paths)
    assert [i.qid for i in out] == ["q1"]


def test_rag_vs_closed_book_pools_originals_only_and_gives_each_copy_set_its_own_row():
    from evals.engine.report.compare import compare_sets

    def arm(cond: str, pred: str) -> list[ItemRecord]:
        sets = ("medqa", "pubmedqa", "medqa~drug-names")
        return [_rec(cond, ds, str(i), pred, "A", {"A": "A"}) for ds in sets for i in range(4)]

    rows = {row.dataset: row for row in compare_sets(arm("cb", "B"), arm("rag", "A"))}
    assert list(rows) == ["medqa", "pubmedqa", "all", "medqa~drug-names"]
    assert rows["all"].a.n == 8 and rows["medqa~drug-names"].a.n == 4  # the copies are not pooled
