"""The local generator: a GGUF model run in-process by llama.cpp (``llama-cpp-python``).

One model instance is shared by every caller, and llama.cpp is not thread-safe: every call into
it holds one lock (a stream holds it until it is exhausted or closed). The thread count is the
profile's ``[generator] threads`` when set, else chosen at each call from the CPUs nothing else
is using (:func:`free_cpus`): on a shared 2-core machine two threads beside busy work collapse
generation speed while one keeps it, and on a quiet one two are 1.5x faster; prompt processing
is what dominates RAG latency.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Generator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from core.errors import GeneratorError, GeneratorTimeout, ModelError, require
from core.types import Generation, Message
from indexes.files import sha256_file
from rag.generate.backend import Deadline, chat_messages, generation
from rag.generate.llama_scoring import (
    candidate_logprobs,
    last_position_logits,
    settle_prefix,
    single_token_ids,
)
from rag.generate.model_files import recorded_sha256
from rag.generate.prefix_states import PrefixStates

__all__ = ["LlamaCppGenerator", "default_threads", "free_cpus"]

FIXED_PREFIXES = 16  # the earlier-turn token lists kept (``_fixed_prefix``): system turns, judge passages
FREE_CPUS_EVERY_S = 10.0  # how long a thread count chosen by the load (``free_cpus``) stands


def default_threads() -> int:
    """Half the CPUs this process may run on (affinity-aware), at least one: the thread count a
    model loads with, and the choice where :func:`free_cpus` cannot read the CPUs' load."""
    return max(1, len(os.sched_getaffinity(0)) // 2)


def free_cpus(window_s: float = 0.2) -> int:
    """How many of this process's CPUs nothing else is using now, at least one: each one's idle
    share over ``window_s`` (``/proc/stat``), summed and rounded; :func:`default_threads` where
    that cannot be read.

    Measured on this 2-core machine (a whole cold answer, 2026-11-27): 2 threads took 0.65x the
    time of 1 on a quiet machine, as long beside one busy process, and ran past the timeout beside
    work on both cores. llama.cpp's results do not depend on the thread count (the same logits to
    the bit, ``tests/e2e/test_llamacpp.py``), so the count can follow the load, call by call.
    """
    cpus = sorted(os.sched_getaffinity(0))
    try:
        before = _cpu_times(cpus)
        time.sleep(window_s)
        after = _cpu_times(cpus)
    except (OSError, ValueError):
        return default_threads()
    idle = 0.0
    for cpu in cpus:
        (idle0, total0), (idle1, total1) = before[cpu], after[cpu]
        idle += (idle1 - idle0) / (total1 - total0) if total1 > total0 else 1.0
    return max(1, min(len(cpus), int(idle + 0.5)))


def _now() -> float:
    return time.monotonic()


def _cpu_times(cpus: Sequence[int]) -> dict[int, tuple[int, int]]:
    """(idle + iowait, total) jiffies of each CPU in ``cpus``, from ``/proc/stat``."""
    wanted, out = {f"cpu{c}": c for c in cpus}, {}
    with open("/proc/stat", encoding="ascii") as stat:
        for line in stat:
            name, *fields = line.split()
            if name in wanted:
                ticks = [int(f) for f in fields[:8]]
                out[wanted[name]] = (ticks[3] + ticks[4], sum(ticks))
    if len(out) != len(cpus):
        raise ValueError("/proc/stat lists other CPUs than this process may run on")
    return out


class LlamaCppGenerator:
    """A :class:`rag.protocols.Generator` over a local GGUF file; greedy unless told otherwise.

    The model loads lazily on first use (or on :meth:`load`), so constructing one is cheap.
    """

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 4096,
        threads: int | None = None,
        seed: int = 0,
        batch: int = 512,
        timeout_s: float | None = None,
        state_dir: Path | None = None,
    ) -> None:
        self.model_path = Path(model_path).expanduser()
        if not self.model_path.is_file():
            raise ModelError(f"no generator model at {self.model_path}; run `medcite models fetch`")
        self.name = f"llama.cpp:{self.model_path.stem}"
        self.n_ctx = n_ctx
        self.threads = threads  # None: chosen by the load at each call (``_use_threads``)
        self.seed = seed
        self.batch = batch
        self.timeout_s = timeout_s
        self.state_dir = state_dir
        self._prefix_states: PrefixStates | None = None
        self._threads_now: tuple[int, float] | None = None  # (count set in llama.cpp, when chosen)
        self._lock = threading.Lock()
        self._llm: Any = None
        self._formatter: Any = None
        self._sha256: str | None = None
        self._single_tokens: dict[str, tuple[int, ...]] = {}
        # the turns before a prompt's last -> their tokens (``_fixed_prefix``), oldest first
        self._fixed: dict[tuple[tuple[str, str], ...], list[int]] = {}

    # -- loading -------------------------------------------------------------------------------

    def load(self) -> None:
        """Load the model now (the API's start-up does this so the first request is not slow)."""
        with self._lock:
            self._model()

    def _model(self) -> Any:
        """The loaded ``llama_cpp.Llama``; the caller holds the lock."""
        if self._llm is not None:
            return self._llm
        llama_cpp: Any = require("llama_cpp", package="llama-cpp-python", extra="llm")
        if not self.model_path.is_file():
            raise ModelError(f"no generator model at {self.model_path}; run `medcite models fetch`")
        try:
            llm = llama_cpp.Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_batch=self.batch,
                n_threads=self.threads or default_threads(),
                n_threads_batch=self.threads or default_threads(),
                seed=self.seed,
                verbose=False,
            )
        except ValueError as exc:  # llama-cpp-python's way of saying "cannot load this file"
            raise ModelError(f"cannot load {self.model_path}: {exc}; run `medcite models fetch`") from exc
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError(f"{self.model_path} carries no chat template; use an instruction-tuned GGUF")
        self._formatter = llama_cpp.llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "replace"),
            bos_token=llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace"),
            add_generation_prompt=True,  # the prompt ends with the assistant turn opened
        )
        self._llm = llm
        return llm

    def _prompt(self, llm: Any, messages: Sequence[Message], room: int) -> tuple[list[int], int]:
        """Token ids of the chat, formatted by the GGUF's own template, and how many of them are
        its fixed prefix (``_fixed_prefix``); checks the context fits."""
        tokens = self._tokens(llm, messages)
        if len(tokens) + room > self.n_ctx:
            raise GeneratorError(
                f"the prompt has {len(tokens)} tokens and {room} more are needed, over the context "
                f"window of {self.n_ctx}; pass fewer or shorter passages, or raise n_ctx"
            )
        return tokens, self._fixed_prefix(llm, messages, tokens)

    def _tokens(self, llm: Any, messages: Sequence[Message]) -> list[int]:
        # Special tokens are parsed in the formatted prompt (the template's own <|im_start|> must
        # be), so message content is defused first: it cannot forge a turn of its own.
        try:
            text = self._formatter(messages=chat_messages(messages)).prompt
        except ValueError as exc:  # the template's raise_exception(), e.g. roles out of order
            raise GeneratorError(f"the model's chat template rejected the messages: {exc}") from exc
        tokens: list[int] = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        return tokens

    def _fixed_prefix(self, llm: Any, messages: Sequence[Message], tokens: Sequence[int]) -> int:
        """How many leading tokens of ``tokens`` belong to the turns before the last: the part a
        prompt shares with others of its kind (the system turn of every question; a judge's
        passage and question, asked about one sentence after another) and the only part reused
        from the KV cache (``settle_prefix``). It is a function of the prompt alone, so the same
        prompt always splits the same way."""
        earlier = tuple((m.role, m.content) for m in messages[:-1])
        if not earlier:
            return 0
        if earlier not in self._fixed:  # the earlier turns alone, then an opened assistant turn
            try:
                self._fixed[earlier] = self._tokens(llm, messages[:-1])
            except GeneratorError:  # a template that refuses the shorter chat: nothing is reused
                self._fixed[earlier] = []
            while len(self._fixed) > FIXED_PREFIXES:
                self._fixed.pop(next(iter(self._fixed)))
        shared = 0
        for a, b in zip(tokens, self._fixed[earlier], strict=False):
            if a != b:
                break
            shared += 1
        return shared

    def _use_threads(self, llm: Any) -> None:
        """Set llama.cpp's thread count for this call (the lock is held): the profile's, else the
        CPUs free now, chosen again after ``FREE_CPUS_EVERY_S``. Results do not depend on it."""
        now = _now()
        if self._threads_now is not None and (
            self.threads is not None or now - self._threads_now[1] < FREE_CPUS_EVERY_S
        ):
            return
        count = self.threads or free_cpus()
        if self._threads_now is None or self._threads_now[0] != count:
            llama_cpp: Any = require("llama_cpp", package="llama-cpp-python", extra="llm")
            llama_cpp.llama_set_n_threads(llm.ctx, count, count)
        self._threads_now = (count, now)

    def _states(self, messages: Sequence[Message]) -> PrefixStates | None:
        """Where the fixed prefix's evaluated state is kept between processes: only for a prefix
        of system turns alone, the part every question shares (a judge's passage and question
        change with each question, and would only fill the disk)."""
        earlier = messages[:-1]
        if self.state_dir is None or not earlier or any(m.role != "system" for m in earlier):
            return None
        if self._prefix_states is None:
            identity = {
                "model_sha256": self.fingerprint()["sha256"],
                "n_ctx": self.n_ctx,
                "n_batch": self.batch,
                "llama_cpp": version("llama-cpp-python"),
            }
            self._prefix_states = PrefixStates(self.state_dir, identity)
        return self._prefix_states

    # -- generation ----------------------------------------------------------------------------

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Generation:
        start = time.perf_counter()
        with self._lock:
            llm = self._model()
            self._use_threads(llm)
            tokens, fixed = self._prompt(llm, messages, room=1)
            settle_prefix(llm, tokens, fixed, self._states(messages))
            deadline = Deadline(self.timeout_s)
            out = self._complete(llm, tokens, max_tokens, temperature, stop, deadline, stream=False)
        if deadline.expired:
            raise self._timeout()
        choice, usage = out["choices"][0], out["usage"]
        return generation(
            choice["text"],
            int(usage["prompt_tokens"]),
            int(usage["completion_tokens"]),
            start,
            choice.get("finish_reason"),
        )

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
    ) -> Generator[str, None, dict[str, int]]:
        """Yield text pieces, then return the token usage.

        Stop sequences are held back by llama-cpp-python, never yielded. Each streamed chunk but
        the closing one is one sampled token, so counting them gives the completion tokens.
        """
        completion_tokens = 0
        with self._lock:
            llm = self._model()
            self._use_threads(llm)
            tokens, fixed = self._prompt(llm, messages, room=1)
            settle_prefix(llm, tokens, fixed, self._states(messages))
            deadline = Deadline(self.timeout_s)
            chunks = self._complete(llm, tokens, max_tokens, temperature, stop, deadline, stream=True)
            try:
                for chunk in chunks:
                    choice = chunk["choices"][0]
                    completion_tokens += choice.get("finish_reason") is None  # the last carries none
                    piece = choice["text"]
                    if deadline.expired:
                        break
                    if piece:
                        yield piece
            except (ValueError, RuntimeError) as exc:
                raise GeneratorError(f"llama.cpp failed while streaming: {exc}") from exc
            finally:
                chunks.close()  # also when the consumer stops early: frees the model for others
        if deadline.expired:
            raise self._timeout()
        return {"prompt_tokens": len(tokens), "completion_tokens": completion_tokens}

    def _complete(
        self,
        llm: Any,
        tokens: list[int],
        max_tokens: int,
        temperature: float,
        stop: Sequence[str],
        deadline: Deadline,
        *,
        stream: bool,
    ) -> Any:
        llama_cpp: Any = require("llama_cpp", package="llama-cpp-python", extra="llm")
        try:
            return llm.create_completion(
                tokens,
                max_tokens=max_tokens,
                temperature=temperature,  # 0 selects llama.cpp's greedy sampler
                stop=list(stop),
                seed=self.seed,
                stream=stream,
                stopping_criteria=llama_cpp.StoppingCriteriaList([deadline]),
            )
        except (ValueError, RuntimeError) as exc:
            raise GeneratorError(f"llama.cpp failed to generate: {exc}") from exc

    def _timeout(self) -> GeneratorTimeout:
        return GeneratorTimeout(
            f"generation took longer than {self.timeout_s} s; raise timeout_s, lower max_tokens, "
            "or use fewer generator threads if other work shares the CPU"
        )

    # -- scoring -------------------------------------------------------------------------------

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        """Log-softmax over the whole vocabulary at the reply's first position, per candidate.

        Bare ("A") and space-prefixed (" A") single-token forms are combined with logsumexp; a
        candidate that is never one token gets ``-inf``. Nothing is generated or parsed.
        """
        with self._lock:
            llm = self._model()
            self._use_threads(llm)
            llama_cpp: Any = require("llama_cpp", package="llama-cpp-python", extra="llm")
            tokens, fixed = self._prompt(llm, messages, room=0)
            logits = last_position_logits(llm, llama_cpp, tokens, fixed, self._states(messages))
            for c in candidates:
                if c not in self._single_tokens:
                    self._single_tokens[c] = single_token_ids(llm, c)
        return candidate_logprobs(logits, {c: self._single_tokens[c] for c in candidates})

    # -- identity ------------------------------------------------------------------------------

    def fingerprint(self) -> dict[str, Any]:
        """Identity for caches and manifests; the sha256 comes from the fetch sidecar when present."""
        if self._sha256 is None:
            # A file placed by hand has no sidecar: hash it once per process (about 3 s per GB).
            self._sha256 = recorded_sha256(self.model_path) or sha256_file(self.model_path)
        return {
            "name": self.name,
            "backend": "llama.cpp",
            "file": self.model_path.name,
            "sha256": self._sha256,
            "n_ctx": self.n_ctx,
            "seed": self.seed,
        }
