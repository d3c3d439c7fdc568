"""One home per setting (issue 18 item 1): the command line, the API and the eval loop resolve the
shipped default profile to the same settings.

Each entry point is driven as far as the point where it hands a profile to ``assemble`` (which
would load an index and models): ``medcite ask`` through ``medcite.cli.main``, the server through
``api.state.load_state`` with a capturing assembler, the eval loop through the real
``evals/configs/abstention.toml`` and ``evals.engine.config.condition_profile``. The profiles
must be equal field for field (the pipeline reads its settings from the profile itself); a
setting one entry point overrides on its own (a default of its own, an override that leaks)
fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from api.settings import ApiSettings
from api.state import load_state
from evals.engine.config import condition_profile, load_config
from medcite import cli
from rag.profile import Profile, load_profile

ROOT = Path(__file__).parents[2]


class Handed(Exception):
    """Raised by the capturing assembler: the entry point got as far as assembling."""


def capture(seen: list[Profile]):
    def assemble(profile: Profile, *args: object, **kwargs: object) -> None:
        seen.append(profile)
        raise Handed

    return assemble


def cli_profile(monkeypatch: pytest.MonkeyPatch) -> Profile:
    seen: list[Profile] = []
    monkeypatch.setattr("rag.assemble.assemble", capture(seen))
    with pytest.raises(Handed):
        cli.main(["ask", "What are the qSOFA criteria?"])
    return seen[0]


def api_profile() -> Profile:
    seen: list[Profile] = []
    with pytest.raises(Handed):
        load_state(ApiSettings(env="development", profiles=["default"]), assembler=capture(seen))
    return seen[0]


def eval_profile() -> Profile:
    config = load_config(ROOT / "evals" / "configs" / "abstention.toml")
    assert config.profile == "default"
    cell = next(c for c in config.answer_conditions("abstention-default") if c["verify"] == "profile")
    return condition_profile(load_profile(config.profile), cell)


def test_cli_api_and_eval_loop_resolve_the_default_profile_alike(monkeypatch):
    monkeypatch.delenv("MEDCITE_INDEX", raising=False)
    profiles = {"cli": cli_profile(monkeypatch), "api": api_profile(), "eval": eval_profile()}
    shipped = load_profile("default")
    for where, profile in profiles.items():
        assert profile.model_dump() == shipped.model_dump(), where


def test_the_check_sees_an_entry_point_that_overrides_a_setting():
    # the eval loop's own evidence setting (threshold None unless the grid asks for the profile's)
    config = load_config(ROOT / "evals" / "configs" / "abstention.toml")
    cell = dict(next(iter(config.answer_conditions("abstention-default"))), threshold=None)
    overridden = condition_profile(load_profile("default"), cell)
    assert overridden.model_dump() != load_profile("default").model_dump()
    assert overridden.rerank.threshold is None
