"""Build chat messages from the prompt texts in ``prompts.toml`` (prompts are data, not code)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from rag.types import Hit, Message

PROMPTS_FILE = Path(__file__).with_name("prompts.toml")


@cache
def prompts() -> dict[str, Any]:
    return tomllib.loads(PROMPTS_FILE.read_text(encoding="utf-8"))


def flatten_lines(text: str) -> str:
    """One line per passage: list lines joined by "; ", sentence lines by a space.

    Disease references are lists of short lines ("Arachnodactyly", "Ectopia lentis"); shown
    as-is, the small model echoed the source list instead of answering.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(line if line[-1] in ".:;!?" else line + ";" for line in lines).rstrip(";")


def format_sources(hits: Sequence[Hit], *, max_chars: int = 1500) -> str:
    """Sources numbered ``[1]..[n]`` in the given order, each with title, section and source name."""
    template = prompts()["rag"]["source"]
    blocks = []
    for number, hit in enumerate(hits, start=1):
        c = hit.chunk
        section = " > ".join(p for p in c.section[-2:] if p) or "main text"
        text = flatten_lines(c.text)
        text = text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " …"
        blocks.append(
            template.format(number=number, title=c.title, section=section, source=c.source, text=text)
        )
    return "\n\n".join(blocks)


def rag_messages(question: str, hits: Sequence[Hit]) -> list[Message]:
    p = prompts()["rag"]
    return [
        Message("system", p["system"]),
        Message("user", p["user"].format(sources=format_sources(hits), question=question)),
    ]


def closed_book_messages(question: str) -> list[Message]:
    p = prompts()["closed_book"]
    return [Message("system", p["system"]), Message("user", p["user"].format(question=question))]


def choice_messages(question: str, options: Mapping[str, str], hits: Sequence[Hit] = ()) -> list[Message]:
    """A multiple-choice prompt; the answer is read from the option letters' next-token logits."""
    p = prompts()["choice"]
    listed = "\n".join(f"{letter}. {text}" for letter, text in options.items())
    block = p["sources_block"].format(sources=format_sources(hits)) if hits else ""
    system = p["system_with_sources"] if hits else p["system"]
    return [
        Message("system", system),
        Message("user", p["user"].format(sources_block=block, question=question, options=listed)),
    ]


def reformulation_messages(kind: str, question: str) -> list[Message]:
    p = prompts()[kind]
    return [Message("system", p["system"]), Message("user", p["user"].format(question=question))]


def abstain_token() -> str:
    return str(prompts()["abstain_token"])


def abstain_message() -> str:
    return str(prompts()["abstain_message"])


def closed_book_label() -> str:
    return str(prompts()["closed_book_label"])
