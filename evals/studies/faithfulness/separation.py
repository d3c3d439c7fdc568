"""How well the faithfulness metric's NLI step separates supported from false claims.

    medcite study faithfulness-separation [--items 150] [--seed 13] [--threads N] [--report-only]

Builds the labelled set of ``evals.studies.faithfulness.labelled`` (written with its text to
``--work``, under the data folder), then scores every claim with the exact yes/no step of
``evals.engine.judge.answer_quality.faithfulness``: the same system prompt, ``NLI_USER`` prompt, contexts
formatting and truncation (``_contexts``) and verdict rule (``_yes``: P(yes) >= P(no)), through
the project's judge cache (``$MEDCITE_DATA_DIR/cache/judge.sqlite``), with the default
profile's generator as the judge. The margin reported is ``log P(yes) - log P(no)``, each over
both spellings ("yes"/"Yes"), the quantity the verdict thresholds at 0.

Each scored claim is appended to ``scores.jsonl`` in ``--work`` at once, so a killed run resumes
where it stopped (the judge cache also answers what it had asked). Claims are scored item by
item, so the passages' prefix stays in llama.cpp's KV cache across an item's claims. The report
(``evals.studies.faithfulness.report``, ``evals.studies.faithfulness.page``) goes to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Message
from evals.engine.judge.answer_quality import NLI_USER, YES_NO_SYSTEM, AnswerItem, _contexts, _yes
from evals.engine.judge.cache import CachedJudge, JudgeCache, default_judge_cache_path
from evals.studies.faithfulness.labelled import (
    LabelledItem,
    build_items,
    candidate_rows,
    read_items,
    write_items,
)
from rag.generate.backend import logsumexp
from rag.generate.yes_no import CANDIDATES, NO, YES
from rag.protocols import Generator

DEFAULT_OUT = Path("docs/results/eval/faithfulness-separation")


@dataclass(frozen=True)
class Judged:
    log_p_yes: float  # log P over the whole vocabulary, both spellings combined
    log_p_no: float
    verdict: bool  # the metric's own verdict (``answer_quality._yes``)

    @property
    def margin(self) -> float:
        return self.log_p_yes - self.log_p_no


def nli_user(item: LabelledItem, claim: str) -> str:
    """The faithfulness metric's NLI prompt for ``claim`` against the item's contexts."""
    return NLI_USER.format(contexts=_contexts(AnswerItem(item.question, "", item.contexts)), claim=claim)


def judge_claim(judge: Generator, item: LabelledItem, claim: str) -> Judged:
    """One claim judged as the metric judges a statement; the verdict comes from the metric's own
    function (a cache hit after the log-probability call, which asks the same question)."""
    user = nli_user(item, claim)
    logprobs = judge.next_token_logprobs(
        [Message("system", YES_NO_SYSTEM), Message("user", user)], CANDIDATES
    )
    log_yes = logsumexp([logprobs.get(t, float("-inf")) for t in YES])
    log_no = logsumexp([logprobs.get(t, float("-inf")) for t in NO])
    return Judged(log_yes, log_no, _yes(judge, user))


def read_scores(path: Path) -> dict[str, dict[str, Any]]:
    """Scored claims by id (a truncated last line, from a killed run, is skipped)."""
    if not path.is_file():
        return {}
    out = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            out[row["claim_id"]] = row
    return out


def score_items(items: Sequence[LabelledItem], judge: Generator, scores_path: Path) -> int:
    """Score every claim not yet in ``scores_path``; returns how many were scored now."""
    from tqdm import tqdm

    done = read_scores(scores_path)
    todo = [(item, c) for item in items for c in item.claims if c.claim_id not in done]
    started = time.perf_counter()
    with scores_path.open("a", encoding="utf-8") as fh:
        for n, (item, claim) in enumerate(tqdm(todo, desc="faithfulness claims", unit="claim"), 1):
            t0 = time.perf_counter()
            judged = judge_claim(judge, item, claim.text)
            row = {
                "claim_id": claim.claim_id,
                "qid": claim.qid,
                "rule": claim.rule,
                "label": claim.label,
                "edit": claim.edit,
                "log_p_yes": judged.log_p_yes,
                "log_p_no": judged.log_p_no,
                "margin": judged.margin,
                "verdict": judged.verdict,
                "seconds": round(time.perf_counter() - t0, 3),
            }
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            if n % 10 == 0:
                rate = (time.perf_counter() - started) / n
                print(f"{n}/{len(todo)} claims, {rate:.1f} s/claim", flush=True)
    return len(todo)


def open_judge(paths: Paths, threads: int | None) -> CachedJudge:
    """The default profile's generator behind the project's judge cache."""
    from rag.assemble import make_generator
    from rag.profile import load_profile

    config = load_profile("default").generator
    if threads is not None:
        config = config.model_copy(update={"threads": threads})
    return CachedJudge(make_generator(config, paths), JudgeCache(default_judge_cache_path(paths)))


def labelled_set(
    paths: Paths, work: Path, n_items: int, claims_per_item: int, seed: int
) -> list[LabelledItem]:
    """The set in ``work/claims.jsonl``, built (and written) on the first call."""
    path = work / "claims.jsonl"
    if path.is_file():
        return read_items(path)
    items = build_items(candidate_rows(paths.source_data, claims_per_item), n_items, seed)
    write_items(items, path)
    return items


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=150, help="BioASQ items (questions) to sample")
    parser.add_argument("--claims-per-item", type=int, default=2, help="supported claims per item, at most")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--threads", type=int, default=None, help="judge threads (default: the profile's)")
    parser.add_argument(
        "--work", type=Path, default=None, help="default: $MEDCITE_DATA_DIR/faithfulness-separation"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report-only", action="store_true", help="write the report from the scores so far")
    args = parser.parse_args(argv)
    paths = Paths.from_env()
    work = args.work or paths.data_dir / "faithfulness-separation"
    work.mkdir(parents=True, exist_ok=True)
    items = labelled_set(paths, work, args.items, args.claims_per_item, args.seed)
    if not args.report_only:
        judge = open_judge(paths, args.threads)
        try:
            score_items(items, judge, work / "scores.jsonl")
        finally:
            judge.cache.close()
        print(f"judge calls {judge.calls}, cache hits {judge.hits}", flush=True)
    from evals.studies.faithfulness.page import write_report

    command = (
        f"medcite study faithfulness-separation --items {args.items} --claims-per-item "
        f"{args.claims_per_item} --seed {args.seed}"
    )
    write_report(items, read_scores(work / "scores.jsonl"), args.out, command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
