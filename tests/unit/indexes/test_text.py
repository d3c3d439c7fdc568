from hypothesis import given
from hypothesis import strategies as st

from indexes.bm25 import Bm25Params, Bm25sIndex
from indexes.text import indexed_text, tokenize


def test_keeps_short_and_alphanumeric_medical_tokens():
    assert tokenize("vitamin D deficiency") == ["vitamin", "d", "deficiency"]
    assert tokenize("type 1 diabetes") == ["type", "1", "diabetes"]
    assert tokenize("HbA1c 6.5%") == ["hba1c", "6.5"]
    assert tokenize("IL-6") == ["il", "6", "il6"]
    assert tokenize("CHA2DS2-VASc") == ["cha2ds2", "vasc", "cha2ds2vasc"]


def test_normalises_case_and_accents_and_drops_function_words():
    assert tokenize("Sjögren SYNDROME of the eye") == ["sjogren", "syndrome", "eye"]
    assert tokenize("vitamin A") == ["vitamin", "a"]  # single letters are never stopwords


def test_punctuation_only_has_no_tokens():
    assert tokenize("?!... ---") == []


CORPUS = [
    "Vitamin D deficiency causes rickets in children.",
    "Vitamin B12 deficiency causes megaloblastic anaemia.",
    "Type 1 diabetes is autoimmune destruction of beta cells.",
    "Type 2 diabetes is driven by insulin resistance.",
    "Interleukin IL-6 is raised in cytokine release syndrome.",
    "Interleukin IL-1 blockade treats gout flares.",
    "HbA1c reflects glycaemia over three months.",
    "Fasting glucose reflects glycaemia today.",
    "The CHA2DS2-VASc score estimates stroke risk in atrial fibrillation.",
    "The HAS-BLED score estimates bleeding risk.",
]


def _top(index: Bm25sIndex, query: str) -> int:
    rows, _ = index.search(tokenize(query), k=1)
    return int(rows[0])


def test_medical_terms_are_retrievable_over_close_distractors():
    index = Bm25sIndex.build([tokenize(t) for t in CORPUS], Bm25Params())
    assert _top(index, "vitamin D") == 0
    assert _top(index, "type 1 diabetes") == 2
    assert _top(index, "IL6") == 4  # unhyphenated spelling meets the joined form
    assert _top(index, "IL-6 level") == 4
    assert _top(index, "hba1c") == 6
    assert _top(index, "CHA2DS2-VASc") == 8


def test_indexed_text_puts_title_and_section_before_body():
    assert indexed_text("Marfan syndrome", ("Inheritance",), "Autosomal dominant") == (
        "Marfan syndrome. Inheritance.\nAutosomal dominant"
    )
    assert indexed_text("T", (), "body") == "T.\nbody"


@given(st.text(max_size=300))
def test_tokenize_is_total_and_deterministic(text):
    tokens = tokenize(text)
    assert tokens == tokenize(text)
    assert all(t and t == t.casefold() for t in tokens)
