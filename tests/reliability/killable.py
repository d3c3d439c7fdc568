"""Slow builds and eval runs for test_kill.py to SIGKILL part-way, in a process of their own.

``python -m tests.reliability.killable build DATA_DIR`` builds index ``killed`` from DOCS with an
embedder that sleeps per batch; ``... eval DATA_DIR OUT`` runs EVAL_CONFIG with a model that
sleeps per item. Each appends a line to ``DATA_DIR/progress`` per finished step, for the test to
know when to kill.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.helpers import HashEmbedder, LetterModel, make_doc, word_index

N_DOCS = 700  # one chunk each: three embedding batches of 256, 256 and 188
DOCS = [
    make_doc(f"k:{n}", {"Note": f"Patient note {n} mentions finding w{n} and w{n * 7 % 100}."})
    for n in range(N_DOCS)
]
EVAL_CONFIG = {
    "name": "killed",
    "profile": "fast",
    "seed": 3,
    "mcq": [{"dataset": "medqa", "n": 5}, {"dataset": "pubmedqa", "n": 3}],
    "grid": {"index": ["default"], "mode": ["bm25"], "rerank": ["none"], "k": [1, 2], "closed_book": True},
}


class SlowEmbedder(HashEmbedder):
    def __init__(self, progress: Path | None = None, delay_s: float = 0.0) -> None:
        super().__init__()
        self.progress, self.delay_s = progress, delay_s

    def embed(self, texts):
        time.sleep(self.delay_s)
        vectors = super().embed(texts)
        if self.progress is not None:
            with self.progress.open("a") as fh:
                fh.write(f"{len(texts)}\n")
        return vectors


class SlowLetterModel(LetterModel):
    """tests.helpers.LetterModel (prefers option B) that sleeps per item and logs it to ``progress``."""

    def __init__(self, progress: Path | None = None, delay_s: float = 0.0) -> None:
        super().__init__()
        self.progress, self.delay_s = progress, delay_s

    def next_token_logprobs(self, messages, candidates):
        time.sleep(self.delay_s)
        if self.progress is not None:
            with self.progress.open("a") as fh:
                fh.write("item\n")
        return super().next_token_logprobs(messages, candidates)


def build(data: Path, embedder: HashEmbedder):
    return word_index(data, DOCS, "killed", embedder)


def run(data: Path, out: Path, model: SlowLetterModel):
    from core.paths import Paths
    from evals.engine.config import EvalConfig
    from evals.engine.runner import run_eval

    paths = Paths.from_env().model_copy(update={"data_dir": data})
    return run_eval(EvalConfig.model_validate(EVAL_CONFIG), paths, out=out, progress=False, generator=model)


if __name__ == "__main__":
    data = Path(sys.argv[2])
    if sys.argv[1] == "build":
        build(data, SlowEmbedder(data / "progress", delay_s=0.5))
    else:
        run(data, Path(sys.argv[3]), SlowLetterModel(data / "progress", delay_s=0.2))
