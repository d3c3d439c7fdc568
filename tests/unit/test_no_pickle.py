"""Nothing medcite loads back may be a pickle: a pickle runs code when it is read.

Scans the project's own source for the ways Python code unpickles: the pickle family of
modules, joblib/dill/cloudpickle loaders, shelve, torch.load without weights_only=True, and
numpy loads that allow pickles.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("medcite", "core", "rag", "corpora", "indexes", "evals", "api", "training", "bench", "scripts")
FORBIDDEN = {
    "pickle module": re.compile(r"^\s*(import|from)\s+(c?pickle|dill|cloudpickle|shelve|marshal)\b", re.M),
    "pickle call": re.compile(r"\b(c?pickle|dill|cloudpickle|joblib|marshal)\.loads?\("),
    "shelve.open": re.compile(r"\bshelve\.open\("),
    "numpy allow_pickle=True": re.compile(r"allow_pickle\s*=\s*True"),
    "torch.load without weights_only=True": re.compile(r"\btorch\.load\((?![^)]*weights_only\s*=\s*True)"),
    "pandas read_pickle": re.compile(r"\.read_pickle\("),
    # diskcache (a llama-cpp-python dependency) pickles by default: CVE-2025-69872, triaged in
    # scripts/audit-ignore.toml on the grounds that nothing here opens one.
    "diskcache or llama.cpp's disk cache": re.compile(r"\bdiskcache\b|LlamaDiskCache"),
}


# Files allowed one of the patterns above, and why. Keep this list short and the reasons checkable.
ALLOWED = {
    # Rebuilds evals/robustness/drug_brands.tsv from a third-party package's pickled dictionary,
    # hash-pinned and read with an unpickler that refuses every global (tested below); the
    # product reads the TSV only.
    "scripts/drug_brands.py",
}


def sources() -> list[Path]:
    return sorted(
        p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if str(p.relative_to(ROOT)) not in ALLOWED
    )


def test_the_scan_covers_the_code():
    assert len(sources()) > 80


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_no_source_file_unpickles(name):
    pattern = FORBIDDEN[name]
    offenders = [
        f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
        for path in sources()
        for text in [path.read_text(encoding="utf-8")]
        for m in pattern.finditer(text)
    ]
    assert offenders == [], f"{name} in {offenders}"


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("pickle module", "import pickle"),
        ("pickle call", "data = pickle.loads(blob)"),
        ("numpy allow_pickle=True", "np.load(path, allow_pickle=True)"),
        ("torch.load without weights_only=True", "state = torch.load(path)"),
        ("diskcache or llama.cpp's disk cache", "llm.set_cache(llama_cpp.LlamaDiskCache(path))"),
    ],
)
def test_the_patterns_catch_what_they_name(name, line):
    assert FORBIDDEN[name].search(line)
    assert not FORBIDDEN["torch.load without weights_only=True"].search("torch.load(p, weights_only=True)")


def test_the_allowed_unpickler_refuses_anything_but_plain_data():
    import importlib.util
    import os
    import pickle

    spec = importlib.util.spec_from_file_location("drug_brands", ROOT / "scripts" / "drug_brands.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class Exploit:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    assert module.data_only(pickle.dumps({"a": ["b", 1]})) == {"a": ["b", 1]}
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        module.data_only(pickle.dumps(Exploit()))
