"""Option order shuffled: does the model pick a position rather than an answer?"""

from __future__ import annotations

import dataclasses
import random

from evals.types import McqItem


def shuffle_options(item: McqItem, rng: random.Random) -> McqItem | None:
    """The options in a random order other than the original, relettered A, B, ...; the gold
    letter follows its option. ``meta["option_map"]``: new letter -> original letter."""
    letters = list(item.options)
    if len(letters) < 2:
        return None
    order = letters[:]
    while order == letters:  # two options: the swap; more: any order but the original
        rng.shuffle(order)
    option_map = dict(zip(letters, order, strict=True))  # new letter -> original letter
    options = {new: item.options[old] for new, old in option_map.items()}
    gold = next(new for new, old in option_map.items() if old == item.answer)
    moved = [f"{old}->{new}" for new, old in option_map.items() if new != old]
    meta = {**item.meta, "perturbation": "shuffle-options", "option_map": option_map, "changes": moved}
    return dataclasses.replace(
        item, dataset=f"{item.dataset}~shuffle-options", options=options, answer=gold, meta=meta
    )
