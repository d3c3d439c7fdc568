"""``medcite bench | train | study NAME``: every runnable module has a name, every name runs."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from medcite.cli import main
from medcite.commands.programs import PROGRAMS

REPO = Path(__file__).resolve().parents[2]
CHILD_ONLY = {
    "bench.retrieval.dense",
    "bench.retrieval.hybrid",
    "bench.retrieval.lexical",
}  # run_all's children


def runnable_modules() -> set[str]:
    """Modules of bench/, training/ and evals/studies/ with a ``main()`` run as ``__main__``."""
    found = set()
    for folder in ("bench", "training", "evals/studies"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if 'if __name__ == "__main__"' in text:
                found.add(".".join(path.relative_to(REPO).with_suffix("").parts))
    return found - CHILD_ONLY


def test_every_runnable_module_has_a_name_and_every_name_a_main():
    named = {module for table in PROGRAMS.values() for module in table.values()}
    assert runnable_modules() == named
    for module in named:
        entry = getattr(importlib.import_module(module), "main", None)
        assert callable(entry), module
        inspect.signature(entry).bind()  # run_program calls main() with the flags in sys.argv


@pytest.mark.parametrize(
    "command, name", [("bench", "clinician"), ("train", "quotes"), ("study", "verifier")]
)
def test_a_name_runs_its_module_with_the_rest_of_the_line_as_its_flags(command, name, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, name, "--help"])
    assert done.value.code == 0
    assert f"usage: medcite {command} {name}" in capsys.readouterr().out


def test_an_unknown_name_lists_the_known_ones(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "clinicain"])
    err = capsys.readouterr().err
    assert "invalid choice: 'clinicain'" in err and "clinician" in err
