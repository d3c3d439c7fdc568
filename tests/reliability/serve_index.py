"""A live API server over an index under a data folder, in a process of its own.

Used by test_index_faults.py: if damaging the served index files crashed the server (SIGBUS on a
truncated memory-mapped file), only this process would die, and the test would fail with a
message instead of killing pytest. Run as ``python -m tests.reliability.serve_index DATA_DIR NAME``;
prints the base URL on its first line of stdout and serves until its stdin is closed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from api.settings import ApiSettings
from core.paths import Paths
from rag.assemble import Assembled
from rag.profile import Profile
from tests.api.support import KEY, ScriptedGenerator, live_server, scripted_assembler
from tests.helpers import HashEmbedder


def main(data_dir: Path, index: str) -> None:
    paths = Paths.from_env().model_copy(update={"data_dir": data_dir})
    scripted = scripted_assembler(paths, ScriptedGenerator("Unused [1]."))

    def assemble(profile: Profile) -> Assembled:
        assembled = scripted(profile)
        assembled.embedder = HashEmbedder()  # the index's vectors come from it: /v1/retrieve mode=dense
        return assembled

    settings = ApiSettings(
        env="production", api_keys=[KEY], profiles=["fast"], index=index, rate_limit_per_minute=0
    )
    with live_server(settings, assemble) as (url, _):
        print(url, flush=True)
        sys.stdin.read()  # until the test closes the pipe


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
