"""A live API server for the load test, in a process of its own (so its memory can be read alone).

Real BM25 index under DATA_DIR (index "default"), a scripted model streaming a cited reply word
by word (one generation at a time, like llama.cpp), 32 API keys, the default queue and per-key
rate limits. Run as ``python -m tests.reliability.serve_load DATA_DIR``; prints the base URL on
its first line of stdout and serves until its stdin is closed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from api.settings import ApiSettings
from core.paths import Paths
from tests.api.support import ScriptedGenerator, live_server, scripted_assembler

KEYS = [f"load-client-{n:02d}-0123456789abcdef" for n in range(32)]
REPLY = "Use the CHA2DS2-VASc score to decide on anticoagulation in atrial fibrillation [1]."
WORD_DELAY_S = 0.02  # ~12 words: a quarter of a second per answer, so the queue fills under load


def main(data_dir: Path) -> None:
    paths = Paths.from_env().model_copy(update={"data_dir": data_dir})
    assembler = scripted_assembler(paths, ScriptedGenerator(REPLY, delay_s=WORD_DELAY_S))
    settings = ApiSettings(env="production", api_keys=KEYS, profiles=["fast"], index="default")
    with live_server(settings, assembler) as (url, _):
        print(url, flush=True)
        sys.stdin.read()  # until the test closes the pipe


if __name__ == "__main__":
    main(Path(sys.argv[1]))
