"""The system turn's KV cache saved to disk, so a new process does not evaluate it again.

Every answer prompt starts with the same system turn (185 tokens for the RAG prompt), which
costs about 4.6 s of prompt evaluation on one thread of this 2-core machine: most of what a cold
`medcite ask` pays before the question's own tokens. ``settle_prefix`` already evaluates that
prefix alone from position 0 and reuses it within a process; this keeps the result of that same
evaluation in a llama.cpp session file (its own binary format: the token ids and the context
state, no pickle), and a later process restores it in milliseconds.

Restoring is exact: the file holds the bytes the evaluation produced, so the logits that follow
are those of evaluating the prefix afresh (``tests/e2e/test_llamacpp.py`` compares them to the
bit across processes). A file is keyed by everything that could change those bytes (the model's
sha256, context and batch size, llama-cpp-python's version, the tokens; not the thread count,
which changes no result), written atomically, and one that fails to load or holds other tokens
is deleted and evaluated again.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import require

__all__ = ["PrefixStates"]

SUFFIX = ".session"


class PrefixStates:
    """Session files of fixed prompt prefixes in ``folder`` (``DATA_DIR/cache/llama-prefix``)."""

    def __init__(self, folder: Path, identity: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.identity = identity

    def path(self, tokens: Sequence[int]) -> Path:
        key = json.dumps({**self.identity, "tokens": list(tokens)}, sort_keys=True)
        return self.folder / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:32] + SUFFIX)

    def restore(self, llm: Any, tokens: Sequence[int]) -> bool:
        """Put the saved state of ``tokens`` into ``llm``'s context; False when there is none.

        On success the KV cache holds exactly ``tokens`` from position 0, as if just evaluated.
        """
        path = self.path(tokens)
        if not path.is_file():
            return False
        llama_cpp = _llama_cpp()
        capacity = llm.n_ctx()
        out = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        loaded = llama_cpp.llama_state_load_file(
            llm.ctx, str(path).encode(), out, capacity, ctypes.byref(count)
        )
        if not loaded or list(out[: count.value]) != list(tokens):
            llm.reset()  # whatever was half-loaded is not trusted: the caller evaluates afresh
            path.unlink(missing_ok=True)
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        return True

    def save(self, llm: Any, tokens: Sequence[int]) -> None:
        """Write the context's state, which must hold exactly ``tokens``; best effort: a folder
        that cannot be written only means the next process evaluates the prefix again."""
        path = self.path(tokens)
        llama_cpp = _llama_cpp()
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        ids = (llama_cpp.llama_token * len(tokens))(*tokens)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if llama_cpp.llama_state_save_file(llm.ctx, str(tmp).encode(), ids, len(tokens)):
                os.replace(tmp, path)
        except OSError:
            pass
        finally:
            tmp.unlink(missing_ok=True)


def _llama_cpp() -> Any:
    return require("llama_cpp", package="llama-cpp-python", extra="llm")
