"""Audit the installed Python packages against PyPI's published vulnerability records.

    python scripts/audit_deps.py [--ignore scripts/audit-ignore.toml] [--out FILE.json]

For every distribution installed in this environment it reads PyPI's JSON API, whose
``vulnerabilities`` field carries the Python Packaging Advisory Database / OSV records that
pip-audit's default service reads. It asks for the exact installed version first; a registry
that serves only the project page (no per-version pages, as the registry this project is built
against does, so pip-audit reports every package as "not found") still answers exactly for
packages whose installed version is the latest release; any other package is listed as not
audited, never as clean.

Exit status: 1 when a known vulnerability affects an installed version and is not triaged in the
ignore file (each entry there needs a reason), 0 otherwise. A registry that cannot be reached is
reported and does not fail the run: an outage is not a finding.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

PYPI = "https://pypi.org/pypi"
HERE = Path(__file__).resolve().parent


@dataclass
class Audit:
    name: str
    version: str
    status: str  # audited | not-audited | unreachable
    vulnerabilities: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""


def fetch(url: str) -> dict[str, Any] | None:
    """The JSON at ``url``; None on 404 (the page does not exist)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def audit(name: str, version: str) -> Audit:
    try:
        exact = fetch(f"{PYPI}/{name}/{version}/json")
        if exact is not None:
            return Audit(name, version, "audited", list(exact.get("vulnerabilities") or []))
        project = fetch(f"{PYPI}/{name}/json")
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
        return Audit(name, version, "unreachable", note=str(exc))
    if project is None:
        return Audit(name, version, "not-audited", note="not on PyPI")
    latest = str(project["info"]["version"])
    if latest == version:
        return Audit(name, version, "audited", list(project.get("vulnerabilities") or []))
    return Audit(name, version, "not-audited", note=f"latest is {latest}; no per-version record served")


def installed() -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and name.lower() != "medcite":
            seen[name.lower()] = dist.version
    return sorted(seen.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ignore", type=Path, default=HERE / "audit-ignore.toml")
    parser.add_argument("--out", type=Path, help="write every package's result as JSON")
    args = parser.parse_args(argv)
    ignored: dict[str, str] = {}
    if args.ignore.is_file():
        ignored = {k: str(v["reason"]) for k, v in tomllib.loads(args.ignore.read_text()).items()}
    packages = installed()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda nv: audit(*nv), packages))
    findings = []
    for result in results:
        for vuln in result.vulnerabilities:
            ids = {str(vuln.get("id"))} | {str(a) for a in vuln.get("aliases") or []}
            if not ids & ignored.keys():
                findings.append((result, vuln))
    counts = {s: sum(r.status == s for r in results) for s in ("audited", "not-audited", "unreachable")}
    print(
        f"{len(results)} packages: {counts['audited']} audited, {counts['not-audited']} not audited, "
        f"{counts['unreachable']} unreachable; {len(findings)} untriaged vulnerabilities"
    )
    for result, vuln in findings:
        fixed = ", ".join(vuln.get("fixed_in") or []) or "no fix listed"  # type: ignore[arg-type]
        print(f"  {result.name} {result.version}: {vuln.get('id')} (fixed in {fixed}) {vuln.get('link', '')}")
    for result in results:
        if result.status != "audited":
            print(f"  not audited: {result.name} {result.version} ({result.note})")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
