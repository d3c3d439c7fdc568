"""A scripted model for rubric runs: it replies as an arm and grades as the judge.

An importable module (not a test file), so Ray workers can unpickle it. Every message it is
sent is kept (``seen``; with ``log``, also appended to that file, for calls made in workers), so
a test can check what reached a prompt.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Generation, Message
from evals.engine.rubric.judge import SYSTEM as JUDGE_SYSTEM
from rag.profile import PROFILES_DIR
from tests.helpers import written_answer

FIXTURE = Path(__file__).parent / "fixtures" / "healthbench_sample.jsonl"
CANARY = "canary GUID medcite-test-5d0c8a31-rubric"
CLOSED_BOOK_REPLY = "Give paracetamol for the weight and see a doctor about dehydration; 60 to 100 is normal."
HB = f"rubric:{FIXTURE}"
CLINICIAN = "clinician-rubric:test2"
RAG = "rubric/default/bm25/none/k=2"  # the RAG arm of :func:`rubric_config`
_CRITERION = re.compile(r"Criterion \(([-+0-9.]+) points\): (.*?)\n\nDoes the reply", re.DOTALL)
_REPLY = re.compile(r"Reply to grade:\n(.*)\n\nCriterion \(", re.DOTALL)


class RubricModel:
    """Replies: the closed-book text above, a cited answer with sources, a JSON verdict as judge.

    The judge says a criterion is met when the reply holds the criterion's last word (``always``
    True or False overrides that); ``garbage`` first replies that many times with text that is no
    JSON before each verdict. After ``budget`` calls it raises KeyboardInterrupt (a killed run)."""

    name = "rubric-model"

    def __init__(
        self,
        *,
        always: bool | None = None,
        garbage: int = 0,
        budget: int | None = None,
        log: Path | None = None,
    ) -> None:
        self.always, self.garbage, self.budget = always, garbage, budget
        self.log = str(log) if log else None
        self.seen: list[str] = []
        self.answers = 0
        self.judged = 0

    def _record(self, messages: list[Message]) -> None:
        self.seen += [m.content for m in messages]
        if self.log:
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps([m.content for m in messages]) + "\n")
        if self.budget is not None and self.answers + self.judged >= self.budget:
            raise KeyboardInterrupt  # what Ctrl-C or a kill does mid-run

    def verdict(self, messages: list[Message]) -> str:
        asked = [m for m in messages if m.role == "user"]
        criterion = _CRITERION.search(asked[0].content)
        reply = _REPLY.search(asked[0].content)
        if len(asked) - 1 < self.garbage:
            return "The reply seems fine to me."
        assert criterion and reply, messages
        word = re.findall(r"[a-z]+", criterion.group(2).lower())[-1]
        met = word in reply.group(1).lower() if self.always is None else self.always
        return "```json\n" + json.dumps({"met": met, "explanation": f"looked for {word}"}) + "\n```"

    def generate(self, messages, *, max_tokens, temperature=0.0, stop=()):
        messages = list(messages)
        self._record(messages)
        if messages[0].content == JUDGE_SYSTEM:
            self.judged += 1
            text = self.verdict(messages)
        else:
            self.answers += 1
            closed = "Question:" in messages[-1].content and "Sources" not in messages[-1].content
            text = CLOSED_BOOK_REPLY if closed else written_answer(messages[-1].content)
        return Generation(text=text, prompt_tokens=50, completion_tokens=10, seconds=0.0)

    def stream(self, messages, *, max_tokens, temperature=0.0, stop=()):
        yield self.generate(messages, max_tokens=max_tokens, temperature=temperature, stop=stop).text

    def next_token_logprobs(self, messages, candidates):
        self._record(list(messages))
        return {c: (-0.1 if c.lower() == "yes" else -3.0) for c in candidates}

    def fingerprint(self):
        return {"name": self.name, "sha256": "2" * 64}


def fresh_paths(index_dir: Path, folder: Path) -> Paths:
    """A data dir of its own (empty caches) sharing the built index."""
    folder.mkdir()
    os.symlink(index_dir, folder / "indexes")
    return Paths.from_env().model_copy(update={"data_dir": folder})


def rubric_config(tmp_path: Path, name: str = "rubric", **changes: Any) -> Any:
    """Both rubric sets (3 items each), closed-book and BM25 top 2 on ``default``; a judge."""
    from evals.engine.config import EvalConfig

    profile = tmp_path / "fast-flag.toml"  # "flag": BM25-only answers are kept (labelled), so graded
    profile.write_text(
        (PROFILES_DIR / "fast.toml").read_text().replace("[verify]\n", '[verify]\npolicy = "flag"\n')
    )
    raw = {
        "name": name,
        "profile": str(profile),
        "seed": 2,
        "rubric": [{"dataset": HB}, {"dataset": CLINICIAN, "n": 3}],
        "rubric_judge": {"matched": ["key_fact", "abstains"]},
        "grid": {"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [2], "closed_book": True},
    }
    return EvalConfig.model_validate({**raw, **changes})
