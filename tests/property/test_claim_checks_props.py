"""Property tests of the claim checks a support score is capped by: the dose-scope check
(rag/reading/conditions.py) and the copy check (rag/gate/copy_check.py) read model output
and passages of any shape, so they must never raise, and a passage sentence copied as it is
must never count as changed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rag.gate.copy_check import changed_words
from rag.gate.dose_scope import unscoped_qualifiers
from rag.generate.sentences import sentence_spans
from tests.helpers import make_chunk

WORDS = st.sampled_from(
    "sepsis septic shock is defined as not no organ dysfunction caused by a host response to "
    "infection in children pregnancy renal dose 1 mg/kg 0.5 mg once daily every 12 hours the of "
    "hypokalemia hyperkalemia NPC nuclear pore complex [1] ; : , . - 2. 3)".split()
)
TEXT = st.one_of(st.text(max_size=300), st.lists(WORDS, max_size=60).map(" ".join))


@settings(max_examples=300, deadline=None)
@given(claim=TEXT, passage=TEXT)
def test_the_checks_never_raise_and_answer_in_their_shapes(claim, passage):
    chunk = make_chunk("p#0", passage)
    changes = changed_words(claim, chunk)
    groups = unscoped_qualifiers(claim, chunk)
    assert isinstance(changes, tuple) and all(isinstance(c, str) and " <- " in c for c in changes)
    assert isinstance(groups, tuple) and all(isinstance(g, str) for g in groups)


@settings(max_examples=300, deadline=None)
@given(passage=st.lists(WORDS, min_size=1, max_size=80).map(" ".join))
def test_a_passage_sentence_copied_as_it_is_changes_nothing(passage):
    chunk = make_chunk("p#0", passage)
    for start, end in sentence_spans(passage):
        assert changed_words(passage[start:end], chunk) == ()
