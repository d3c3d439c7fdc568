"""scripts/audit_deps.py: findings fail, triaged ones do not, unknown versions are never called clean."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def audit_deps(monkeypatch):
    spec = importlib.util.spec_from_file_location("audit_deps", ROOT / "scripts" / "audit_deps.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "audit_deps", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    pages = {
        "https://pypi.org/pypi/safe/1.0/json": {"vulnerabilities": []},
        "https://pypi.org/pypi/holey/2.0/json": {
            "vulnerabilities": [{"id": "GHSA-xxxx", "aliases": ["CVE-1"], "fixed_in": ["2.1"]}]
        },
        "https://pypi.org/pypi/latest-only/json": {"info": {"version": "3.0"}, "vulnerabilities": []},
        "https://pypi.org/pypi/old/json": {"info": {"version": "9.0"}, "vulnerabilities": []},
    }
    monkeypatch.setattr(module, "fetch", lambda url: pages.get(url))
    monkeypatch.setattr(
        module,
        "installed",
        lambda: [("safe", "1.0"), ("holey", "2.0"), ("latest-only", "3.0"), ("old", "1.0")],
    )
    return module


def test_an_untriaged_vulnerability_fails_and_unknown_versions_are_listed(audit_deps, tmp_path, capsys):
    out = tmp_path / "audit.json"
    assert audit_deps.main(["--ignore", str(tmp_path / "none.toml"), "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "4 packages: 3 audited, 1 not audited, 0 unreachable; 1 untriaged" in printed
    assert "holey 2.0: GHSA-xxxx (fixed in 2.1)" in printed
    assert "not audited: old 1.0 (latest is 9.0" in printed
    assert '"status": "not-audited"' in out.read_text()


def test_a_finding_triaged_by_an_alias_passes(audit_deps, tmp_path):
    ignore = tmp_path / "ignore.toml"
    ignore.write_text('["CVE-1"]\nreason = "not reachable from medcite"\n')
    assert audit_deps.main(["--ignore", str(ignore)]) == 0


def test_the_project_triage_file_gives_a_reason_for_every_entry():
    import tomllib

    entries = tomllib.loads((ROOT / "scripts" / "audit-ignore.toml").read_text())
    assert entries and all(len(entry["reason"]) > 40 for entry in entries.values())
