"""Two runs of ``bench/answers/ask_questions.py`` on the ten questions, side by side, with correctness.

A presented answer is *correct* when it states every key fact of ``KEY_FACTS`` in
``bench/answers/ask_compare.py``, each read off the default corpus's passage that answers the question
(open-medicine guideline summaries, HPO phenotype lists); the two questions the corpus does
not answer (head lice, yellow fever vaccination) are answered correctly only by abstaining.
*Wrong*: presented, but a key fact is missing or the corpus does not answer it. *Missed*: an
abstention on a question the corpus answers. Supported: cited sentences the run's own verifier
marked supported, over those it generated.

    medcite bench ask-compare docs/results/ask_10_questions.json \
        docs/results/ask_10_questions_trained_gate.json --out docs/results/ask_10_side_by_side.md
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any

# question -> regexes an answer must all match (case-insensitive); None: the corpus does not answer
KEY_FACTS: dict[str, list[str] | None] = {
    "Which score is used to estimate stroke risk and decide on anticoagulation in atrial fibrillation?": [
        r"CHA2DS2-VASc"
    ],
    "What are the qSOFA criteria used to screen for sepsis?": [
        r"\b22\b",
        r"\b100\b",
        r"mentation|GCS|Glasgow",
    ],
    "What is the recommended antibiotic for low-severity community-acquired pneumonia in adults?": [
        r"amoxicillin"
    ],
    "Which eGFR range defines CKD stage G3a?": [r"\b45\b", r"\b59\b"],
    "What A1C goal is appropriate for most nonpregnant adults with diabetes?": [r"7\s*%"],
    "What serum urate target should urate-lowering therapy aim for in gout?": [r"6\s*mg/dL"],
    # ORPHA:558 "Very frequent (80-99%)": two of its entries
    "Which phenotypes are very frequent in Marfan syndrome?": [
        r"disproportionate tall stature|slender build|arachnodactyly",
        r"aortic root aneurysm|aortic aneurysm|pneumothorax|pes planus|pectus carinatum|striae",
    ],
    # ORPHA:778 "Very frequent" or "Frequent (30-79%)": two entries of either list
    "What are frequent clinical features of Rett syndrome?": [
        r"hand wringing|microcephaly|motor stereotyp|absent speech|developmental regression|gait disturbance",
        r"seizure|bruxism|dystonia|apraxia|muscle atrophy|failure to thrive|bradykinesia|respiration",
    ],
    "What is the recommended treatment for head lice in children?": None,
    "Which vaccine schedule is recommended for travellers to yellow fever areas?": None,
}


def verdict(answer: dict[str, Any]) -> str:
    """correct, wrong or missed (see the module docstring)."""
    facts = KEY_FACTS.get(answer["question"])
    presented = answer["mode"] == "rag"
    if facts is None:
        return "wrong" if presented else "correct"
    if not presented:
        return "missed"
    text = answer.get("answer") or ""
    return "correct" if all(re.search(f, text, re.IGNORECASE) for f in facts) else "wrong"


def supported(answer: dict[str, Any]) -> tuple[int, int]:
    """(sentences the verifier marked supported, sentences generated)."""
    sentences = answer.get("sentences") or []
    return sum(1 for s in sentences if s.get("supported")), len(sentences)


def shown(answer: dict[str, Any]) -> tuple[int, int]:
    """(sentences presented to the user, of those the verifier marked supported). Runs from before
    the support gate have no per-sentence status: all their sentences were presented."""
    if answer["mode"] != "rag":
        return 0, 0
    sentences = [s for s in answer.get("sentences") or [] if s.get("status", "shown") in ("shown", "flagged")]
    return len(sentences), sum(1 for s in sentences if s.get("supported"))


def summary(run: dict[str, Any]) -> dict[str, Any]:
    answers = run["answers"]
    verdicts = [verdict(a) for a in answers]
    counts, presented = [supported(a) for a in answers], [shown(a) for a in answers]
    stages = run["summary"]["median_seconds"]
    return {
        "presented": sum(a["mode"] == "rag" for a in answers),
        **{v: verdicts.count(v) for v in ("correct", "wrong", "missed")},
        "sentences_shown": sum(n for n, _ in presented),
        "shown_and_supported": sum(k for _, k in presented),
        "shown_unsupported": sum(n - k for n, k in presented),
        "supported_of_generated": f"{sum(s for s, _ in counts)}/{sum(n for _, n in counts)}",
        "median_total_seconds": statistics.median(a["total_seconds"] for a in answers),
        "median_rerank_seconds": stages.get("rerank", 0.0),
        "median_generate_seconds": stages.get("generate", 0.0),
    }


def markdown(names: tuple[str, str], runs: tuple[dict[str, Any], dict[str, Any]]) -> str:
    old, new = runs
    if [a["question"] for a in old["answers"]] != [a["question"] for a in new["answers"]]:
        raise SystemExit("the two runs asked different questions; compare runs of the same question list")
    rule = (__doc__ or "").split("\n\n")[1].replace("\n", " ")
    lines = [
        f"# Ten questions: `{names[0]}` vs `{names[1]}`",
        "",
        rule,
        "",
        "| | " + " | ".join(names) + " |",
        "|---|---|---|",
    ]
    sums = [summary(r) for r in runs]
    for key in sums[0]:
        cells = [f"{s[key]:.2f}" if isinstance(s[key], float) else str(s[key]) for s in sums]
        lines.append(f"| {key.replace('_', ' ')} | " + " | ".join(cells) + " |")
    lines += ["", "| question | " + " | ".join(names) + " |", "|---|---|---|"]
    for a, b in zip(old["answers"], new["answers"], strict=True):
        cells = []
        for answer in (a, b):
            s, n = supported(answer)
            text = " ".join((answer.get("answer") or "").split())[:160].replace("|", "/")
            cells.append(
                f"**{verdict(answer)}** ({answer['mode']}, {s}/{n} supported, "
                f"{answer['total_seconds']:.1f} s): {text}"
            )
        lines.append(f"| {a['question']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/results/ask_10_side_by_side.md"))
    args = parser.parse_args()
    runs = tuple(json.loads(p.read_text(encoding="utf-8")) for p in (args.old, args.new))
    text = markdown((args.old.stem, args.new.stem), runs)  # type: ignore[arg-type]
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
