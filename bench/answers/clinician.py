"""The clinician questions through the whole chain: answered correctly, wrongly, or abstained.

    medcite bench clinician --part test --out docs/results/clinician/test_after.json
    medcite bench clinician --part test --about every --out docs/results/clinician/test_every.json
    medcite bench clinician --part test --off populations --out .../test_no_populations.json
    medcite bench clinician --compare A.json B.json          # paired: McNemar, Wilson intervals
    medcite bench clinician --ablate RUN.json --out .../ablation.json   # each gate check off in turn

Every question of one part of ``clinician-default`` (``evals/datasets/clinician.py``) is asked
with the profile (default: ``default``), its generations cached in
``DATA_DIR/cache/clinician-generations.sqlite`` (greedy decoding is a function of the prompt:
a rerun, or a gate ablation over the same evidence, generates nothing again). Each answer is
scored by ``clinician.outcome``; the summary gives, per kind of question, the count and Wilson
95% interval of each outcome. ``--about``, ``--min-about``, ``--threshold``, ``--keep`` and
``--off CHECK`` change one setting for ablations; the file records what was run. Questions are
asked in a seeded random order (``--limit N``: the first N of it, a random sample).

``--ablate RUN.json`` asks the questions of an earlier run again with each check of
``[verify] off`` (``rag/profile.py:CHECKS``) turned off in turn, in one process: retrieval and
reranking are done once per question and shared, generations come from the cache (a check
that stopped generation before may now let the model answer: that generation is made once).
The table counts, per variant, the outcomes against the run with every check on.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Answer
from evals.datasets.clinician import (
    FROZEN_SHA256,
    TEST2_FILE,
    TEST3_FILE,
    ClinicianItem,
    file_sha256,
    key_fact_given,
    load_clinician,
    outcome,
    sibling_given,
)
from evals.engine.generation_cache import CachingGenerator
from evals.metrics.choice import wilson_interval
from evals.metrics.stats import mcnemar_exact
from rag.assemble import assemble, make_generator
from rag.pipeline import Pipeline
from rag.profile import CHECKS, Profile, load_profile, with_changes
from training.aboutness import answering

GOOD = {"answerable": "correct", "near": "abstained", "far": "abstained"}
SEED = 31


def default_cache(paths: Paths) -> Path:
    return paths.cache_dir / "clinician-generations.sqlite"


def settings_of(args: argparse.Namespace, profile: Profile) -> dict[str, Any]:
    """The profile settings this run changes, section by section (``rag.profile.with_changes``)."""
    verify = {
        "about": args.about or profile.verify.about,
        "min_about": profile.verify.min_about if args.min_about is None else args.min_about,
        "uncited": args.uncited or profile.verify.uncited,
        "off": sorted({*profile.verify.off, *args.off}),
    }
    rerank = {"threshold": args.threshold, "keep": args.keep}
    changes: dict[str, Any] = {"verify": verify, "rerank": {k: v for k, v in rerank.items() if v is not None}}
    if args.no_quotes:
        changes["quote"] = {"threshold": None}
    return changes


def unquoted_run(settings: dict[str, Any]) -> bool:
    """Whether a run's recorded settings turned quoting off (``--no-quotes``; older runs wrote
    ``quote_threshold``)."""
    return (
        settings.get("quote_threshold") == "None" or (settings.get("quote") or {}).get("threshold", 0) is None
    )


def answer_or_replay(
    pipeline: Pipeline, question: str, unquoted: dict[str, Any] | None
) -> Answer | dict[str, Any]:
    """The pipeline's answer; with ``unquoted`` (an earlier run's records of the same part, made
    with quoting off), a question the pipeline does not quote takes that run's record instead of
    generating: the path after quoting is the same code, and deterministic (``*_agreement.json``)."""
    if unquoted is None:
        return pipeline.answer(question)
    quoted = pipeline.quote(question)
    return quoted if quoted is not None else unquoted[question]


def closest_record(item: ClinicianItem, answer: Answer) -> dict[str, Any] | None:
    """For closest lines: the best line's probability, and whether the key fact (or a sibling
    line's) stands in the first line and in the lines shown."""
    lines = [s for s in answer.sentences if s.status == "closest"]
    if answer.outcome != "closest_lines" or not lines:
        return None
    texts = [s.text for s in lines]
    return {
        "best_p": max((s.probability for s in lines if s.probability is not None), default=None),
        "key_first": key_fact_given(item, texts[0]),
        "key_shown": key_fact_given(item, " ".join(texts)),
        "sibling_shown": sibling_given(item, " ".join(texts)),
    }


def scored_record(item: ClinicianItem, answer: Answer, seconds: float) -> dict[str, Any]:
    """One question's record: the answer, its outcome and every generated sentence's support."""
    cited = [c.doc_id for c in answer.citations]
    result = outcome(item, answer.mode, answer.text, cited)
    sibling = None
    if item.siblings:  # which of the sibling lines was shown: the patient's, another's, or none
        shown = answer.mode == "rag"
        sibling = (
            "withheld"
            if not shown
            else "wrong"
            if sibling_given(item, answer.text)
            else "right"
            if key_fact_given(item, answer.text)
            else "other"
        )
    return {
        "qid": item.qid,
        "kind": item.kind,
        "group": item.group,
        "question": item.question,
        "mode": answer.mode,
        "outcome": result,
        "shown": answer.outcome,  # answer / closest_lines / nothing_relevant (rag/answer/outcomes.py)
        "closest": closest_record(item, answer),
        "key_in_kept": item.answerable and any(answering(item, h.chunk) for h in answer.evidence),
        "sibling": sibling,
        "text": answer.text,
        "cited": cited,
        "evidence": [h.chunk.chunk_id for h in answer.evidence],
        "notes": list(answer.notes),
        # every generated sentence, shown or not, with its support: what a threshold curve reads
        "sentences": [
            {
                "text": s.text,
                "markers": list(s.markers),
                "support": round(s.support, 4),
                "status": s.status,
                "reasons": list(s.reasons),
                "probability": s.probability,
            }
            for s in answer.sentences
        ],
        "seconds": round(seconds, 2),
    }


def ask(
    pipeline: Pipeline,
    items: Sequence[ClinicianItem],
    log: Path | None = None,
    unquoted: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Each item's answer, scored; with ``log``, each record is also appended there as it comes
    (JSON lines), and the items already in it are read back instead of asked again, so a
    stopped run keeps its answers and resumes. ``unquoted``: see :func:`answer_or_replay`."""
    done: dict[str, dict[str, Any]] = {}
    if log is not None and log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["qid"]] = row
    records = []
    start = time.perf_counter()
    for n, item in enumerate(items, start=1):
        if item.qid in done:
            records.append(done[item.qid])
            continue
        t0 = time.perf_counter()
        answer = answer_or_replay(pipeline, item.question, unquoted)
        if isinstance(answer, dict):  # the earlier run's record, as it was
            records.append({**answer, "replayed": True})
        else:
            records.append(scored_record(item, answer, time.perf_counter() - t0))
        if log is not None:
            with log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(records[-1], ensure_ascii=False) + "\n")
        result, replayed = records[-1]["outcome"], " (replayed)" if records[-1].get("replayed") else ""
        print(
            f"[{n}/{len(items)} {time.perf_counter() - start:6.0f}s] {result:>12} {item.qid}{replayed}",
            flush=True,
        )
    return records


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per kind of question: n, and each outcome's count, share and Wilson 95% interval."""
    out: dict[str, Any] = {}
    for kind in ("answerable", "near", "far"):
        rows = [r for r in records if r["kind"] == kind]
        if not rows:
            continue
        counts = Counter(r["outcome"] for r in rows)
        out[kind] = {"n": len(rows)} | {
            name: {
                "count": k,
                "share": round(k / len(rows), 4),
                "wilson95": [round(x, 4) for x in wilson_interval(k, len(rows))],
            }
            for name, k in sorted(counts.items())
        }
    siblings = Counter(r["sibling"] for r in records if r.get("sibling"))
    if siblings:  # answerable questions with sibling lines: which one was shown
        out["siblings"] = {"n": sum(siblings.values()), **dict(sorted(siblings.items()))}
    return out


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The two runs paired on the questions both asked: per kind, how many each got right
    (answerable: correct; unanswerable: abstained), how many only one did, the exact McNemar p,
    and how many questions had the same outcome in both (run-to-run agreement when the two
    runs are the same settings)."""
    a = {r["qid"]: r for r in before["records"]}
    b = {r["qid"]: r for r in after["records"]}
    shared = sorted(set(a) & set(b))
    result: dict[str, Any] = {
        "questions": len(shared),
        "same_outcome": sum(a[q]["outcome"] == b[q]["outcome"] for q in shared),
        "same_text": sum(a[q]["text"] == b[q]["text"] for q in shared),
    }
    for kind, good in GOOD.items():
        qids = [q for q in shared if a[q]["kind"] == kind]
        if not qids:
            continue
        ok_a = {q for q in qids if a[q]["outcome"] == good}
        ok_b = {q for q in qids if b[q]["outcome"] == good}
        only_a, only_b = len(ok_a - ok_b), len(ok_b - ok_a)
        result[kind] = {
            "good": good,
            "n": len(qids),
            "before": len(ok_a),
            "after": len(ok_b),
            "only_before": only_a,
            "only_after": only_b,
            "mcnemar_p": mcnemar_exact(only_a, only_b),
        }
    return result


def with_support(pipeline: Pipeline, threshold: float | None) -> Pipeline:
    """``pipeline`` with its verifier's support threshold set to ``threshold`` (None: as it is)."""
    if threshold is None or pipeline.verifier is None:
        return pipeline
    verifier = copy.copy(pipeline.verifier)
    verifier.threshold = threshold
    return pipeline.with_profile(pipeline.profile, verifier=verifier)


def variants(
    pipeline: Pipeline, items: Sequence[ClinicianItem], named: dict[str, Pipeline]
) -> dict[str, Any]:
    """Each named variant of ``pipeline`` on the same items and the same evidence (retrieved and
    reranked once per question): the variants differ only after generation."""
    memo: dict[str, Any] = {}
    evidence = pipeline.evidence

    def shared(question: str, **kwargs: Any) -> Any:
        if question not in memo:
            memo[question] = evidence(question, **kwargs)
        found = memo[question]
        return dataclasses.replace(
            found,
            kept=list(found.kept),
            dropped=list(found.dropped),
            usage=dict(found.usage),
            notes=list(found.notes),
        )

    table: dict[str, Any] = {}
    for name, variant in named.items():
        variant.evidence = shared  # type: ignore[method-assign]
        print(f"-- {name}", flush=True)
        records = ask(variant, items)
        table[name] = {"summary": summary(records), "outcomes": {r["qid"]: r["outcome"] for r in records}}
    return table


def ablate(pipeline: Pipeline, items: Sequence[ClinicianItem]) -> dict[str, Any]:
    """Each check of ``CHECKS`` off in turn (and all on), on the same items and shared evidence."""
    off = pipeline.profile.verify.off
    named = {"none": pipeline}
    named |= {
        f"{name} off": pipeline.with_changes({"verify": {"off": [*off, name]}})
        for name in sorted(CHECKS)
        if name not in off
    }
    return variants(pipeline, items, named)


def sweep(pipeline: Pipeline, items: Sequence[ClinicianItem], thresholds: Sequence[float]) -> dict[str, Any]:
    """The support threshold's curve: each threshold on the same items and shared evidence."""
    named = {f"support {t:g}": with_support(pipeline, t) for t in thresholds}
    return variants(pipeline, items, named)


OUTCOMES = {
    "answerable": ("correct", "other_source", "wrong", "abstained", "degraded"),
    "near": ("abstained", "answered", "degraded"),
    "far": ("abstained", "answered", "degraded"),
}


def _cell(summary_of_kind: dict[str, Any], name: str) -> str:
    entry = summary_of_kind.get(name)
    if not entry:
        return "0"
    low, high = entry["wilson95"]
    return f"{entry['count']} ({100 * entry['share']:.1f}%, {100 * low:.1f}-{100 * high:.1f})"


def report(before: dict[str, Any], after: dict[str, Any], ablation: dict[str, Any] | None) -> str:
    """Markdown: outcomes before and after on the same questions (Wilson 95% intervals), the
    paired comparison, and the ablation table when given."""
    shared = {r["qid"] for r in after["records"]} & {r["qid"] for r in before["records"]}
    runs = {
        name: summary([r for r in run["records"] if r["qid"] in shared])
        for name, run in (("before", before), ("after", after))
    }
    lines = [f"Questions: {len(shared)} of the {after['part']} part, asked in both runs.", ""]
    for kind, names in OUTCOMES.items():
        if kind not in runs["after"]:
            continue
        lines += [f"| {kind} (n={runs['after'][kind]['n']}) | " + " | ".join(names) + " |"]
        lines += ["|---" * (len(names) + 1) + "|"]
        for run in ("before", "after"):
            lines += [f"| {run} | " + " | ".join(_cell(runs[run].get(kind, {}), n) for n in names) + " |"]
        lines += [""]
    paired = compare(before, after)
    lines += ["| paired | good outcome | before | after | only before | only after | McNemar p |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for kind in GOOD:
        if kind in paired:
            row = paired[kind]
            lines += [
                f"| {kind} | {row['good']} | {row['before']} | {row['after']} | {row['only_before']} "
                f"| {row['only_after']} | {row['mcnemar_p']:.2g} |"
            ]
    lines += _wrong_and_siblings(before, after, shared)
    if ablation:
        lines += [
            "",
            "| check off | answerable correct | answerable wrong | near abstained | far abstained |",
        ]
        lines += ["|---|---|---|---|---|"]
        for name, entry in ablation["table"].items():
            s = entry["summary"]
            answerable, near, far = (s.get(kind, {}) for kind in ("answerable", "near", "far"))
            cells = [_cell(answerable, "correct"), _cell(answerable, "wrong")]
            cells += [_cell(near, "abstained"), _cell(far, "abstained")]
            lines += [f"| {name} | " + " | ".join(cells) + " |"]
    return "\n".join(lines) + "\n"


def _wrong_and_siblings(before: dict[str, Any], after: dict[str, Any], shared: set[str]) -> list[str]:
    """Answerable questions answered wrongly in each run (paired, McNemar), and for questions with
    sibling lines which line was shown: the patient's, a sibling, another, or none."""
    a = {r["qid"]: r for r in before["records"] if r["qid"] in shared}
    b = {r["qid"]: r for r in after["records"] if r["qid"] in shared}
    wrong_a = {q for q, r in a.items() if r["outcome"] == "wrong"}
    wrong_b = {q for q, r in b.items() if r["outcome"] == "wrong"}
    only_a, only_b = len(wrong_a - wrong_b), len(wrong_b - wrong_a)
    lines = [
        f"| answerable | wrong | {len(wrong_a)} | {len(wrong_b)} | {only_a} | {only_b} "
        f"| {mcnemar_exact(only_a, only_b):.2g} |"
    ]
    counts = {
        name: Counter(r.get("sibling") for r in run.values() if r.get("sibling"))
        for name, run in (("before", a), ("after", b))
    }
    if any(counts.values()):
        names = ("right", "wrong", "other", "withheld")
        lines += [
            "",
            "| sibling questions | right line shown | a sibling shown | neither (wrong) | withheld |",
        ]
        lines += ["|---|---|---|---|---|"]
        lines += [
            f"| {run} | " + " | ".join(str(c.get(n, 0)) for n in names) + " |" for run, c in counts.items()
        ]
    return lines


def thresholds(text: str) -> list[float]:
    """``--sweep``'s comma-separated thresholds, each in [0, 1]."""
    try:
        values = [float(t) for t in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give thresholds as numbers, e.g. 0.2,0.331,0.4"
        ) from None
    if not all(0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: each threshold must be in [0, 1]")
    return values


# the fresh test parts, each its own frozen file (the others are parts of the issue-31 file)
FRESH_TEST_PARTS = {"test-2": TEST2_FILE, "test-3": TEST3_FILE}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test", "test-2", "test-3"), default="dev")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--about", choices=("judged", "every", "off"), default=None)
    parser.add_argument("--min-about", type=float, default=None)
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument("--keep", type=int, default=None)
    parser.add_argument("--no-quotes", action="store_true", help="never answer by quoting ([quote] off)")
    parser.add_argument(
        "--unquoted-from",
        type=Path,
        default=None,
        metavar="RUN",
        help="a --no-quotes run of the part: questions not quoted take its records (no generation)",
    )
    parser.add_argument("--support", type=float, default=None, help="the verifier's support threshold")
    parser.add_argument("--uncited", choices=("quoted", "supported"), default=None)
    parser.add_argument(
        "--sweep",
        type=thresholds,
        default=None,
        metavar="T1,T2,..",
        help="support thresholds, each on the same questions (with --ablate RUN: RUN's)",
    )
    parser.add_argument(
        "--off", action="append", default=[], choices=sorted(CHECKS), help="turn one gate check off"
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions (a smoke run)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="the generation cache (another file: generate again, for agreement)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--compare", type=Path, nargs=2, default=None, metavar=("BEFORE", "AFTER"))
    parser.add_argument(
        "--ablate", type=Path, default=None, metavar="RUN", help="each check off, on RUN's questions"
    )
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        default=None,
        metavar="FILE",
        help="BEFORE AFTER [ABLATION] -> Markdown",
    )
    return parser


def write(path: Path | None, text: str) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run(args: argparse.Namespace) -> None:
    """Ask the part's questions (with --sweep, at each support threshold; else with --ablate, each
    check off in turn) and write the run."""
    paths = Paths.from_env()
    profile = load_profile(args.profile)
    # In a seeded random order, kinds interleaved: a run stopped early is a random sample of the part.
    questions = FRESH_TEST_PARTS.get(args.part)
    items = load_clinician(questions) if questions else load_clinician(part=args.part)
    random.Random(SEED).shuffle(items)
    items = items[: args.limit]
    if args.ablate:  # the questions of an earlier run
        asked = {r["qid"] for r in json.loads(args.ablate.read_text(encoding="utf-8"))["records"]}
        items = [item for item in items if item.qid in asked]
    generator = CachingGenerator(make_generator(profile.generator, paths), args.cache or default_cache(paths))
    assembled = assemble(profile, paths, generator=generator)
    changes = settings_of(args, profile)
    pipeline = with_support(assembled.pipeline.with_profile(with_changes(profile, changes)), args.support)
    if args.sweep or args.ablate:
        table = sweep(pipeline, items, args.sweep) if args.sweep else ablate(pipeline, items)
        ablated_from = str(args.ablate) if args.ablate else None
        write(args.out, json.dumps({"part": args.part, "from": ablated_from, "table": table}, indent=1))
        return
    # each answer as it comes, in the data folder: a stopped run with the same --out resumes
    log = paths.cache_dir / "clinician-runs" / f"{args.out.stem}.records.jsonl" if args.out else None
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
    unquoted = None
    if args.unquoted_from:
        earlier = json.loads(args.unquoted_from.read_text(encoding="utf-8"))
        if not unquoted_run(earlier["settings"]) or earlier["part"] != args.part:
            raise SystemExit(f"{args.unquoted_from} is not a --no-quotes run of the {args.part} part")
        unquoted = {r["question"]: r for r in earlier["records"]}
    records = ask(pipeline, items, log, unquoted)
    result = {
        "part": args.part,
        "profile": args.profile,
        "quote": profile.quote.model_dump(),  # what the quote path ran with
        "questions_sha256": file_sha256(questions) if questions else file_sha256(),
        "frozen_sha256": FROZEN_SHA256,
        "settings": changes,
        "generations": {"cached": generator.hits, "generated": generator.misses},
        "unquoted_from": str(args.unquoted_from) if args.unquoted_from else None,
        "summary": summary(records),
        "records": records,
    }
    print(json.dumps(result["summary"], indent=1))
    write(args.out, json.dumps(result, indent=1, ensure_ascii=False))


def main() -> None:
    args = parser().parse_args()
    if args.report:
        loaded = [json.loads(p.read_text(encoding="utf-8")) for p in args.report]
        text = report(loaded[0], loaded[1], loaded[2] if len(loaded) > 2 else None)
        print(text)
        write(args.out, text)
    elif args.compare:
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        print(json.dumps(compare(before, after), indent=1))
    else:
        run(args)


if __name__ == "__main__":
    main()
