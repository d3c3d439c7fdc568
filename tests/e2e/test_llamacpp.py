"""End to end with the real generator (Qwen2.5-Coder-1.5B-Instruct Q4_K_M through llama.cpp).

The model is fetched into the model folder when missing (about 1.1 GB, once per machine) and
loaded once for the module. Each test costs a few seconds of CPU.
"""

from __future__ import annotations

import math

import pytest

from core.errors import GeneratorTimeout
from core.paths import Paths
from core.types import Message
from rag.generate.llamacpp import LlamaCppGenerator
from rag.generate.models import DEFAULT_GENERATOR, fetch_model

pytestmark = pytest.mark.e2e

LETTER_ONLY = Message(
    "system", "You answer multiple-choice questions with the letter of the correct option only."
)


@pytest.fixture(scope="module")
def generator() -> LlamaCppGenerator:
    path = fetch_model(Paths.from_env().model_dir, DEFAULT_GENERATOR, progress=False)
    gen = LlamaCppGenerator(path, n_ctx=2048)
    gen.load()
    return gen


def test_mcq_is_answered_by_option_letter_logprobs(generator):
    question = Message(
        "user",
        "Which vitamin deficiency causes scurvy?\nA. Vitamin A\nB. Vitamin B12\nC. Vitamin C\nD. Vitamin D",
    )
    logprobs = generator.next_token_logprobs([LETTER_ONLY, question], ["A", "B", "C", "D"])
    probs = {k: math.exp(v) for k, v in logprobs.items()}
    mass = sum(probs.values())
    # The rest of the mass goes to openings like "The"; a letter must still carry a fair share.
    assert mass > 0.3, probs
    renormalised = {k: p / mass for k, p in probs.items()}
    assert sum(renormalised.values()) == pytest.approx(1.0)
    assert max(renormalised, key=renormalised.__getitem__) == "C" and renormalised["C"] > 0.7, renormalised


def test_relevance_judgement_flips_with_the_passage(generator):
    def p_yes(passage: str) -> float:
        ask = Message(
            "user",
            f"Passage: {passage}\n\nQuestion: What causes scurvy?\n\n"
            "Does the passage answer the question? Reply Yes or No.",
        )
        lp = generator.next_token_logprobs([ask], ["Yes", "No"])
        return math.exp(lp["Yes"]) / (math.exp(lp["Yes"]) + math.exp(lp["No"]))

    relevant = p_yes("Scurvy is caused by a lack of vitamin C (ascorbic acid) in the diet.")
    irrelevant = p_yes("The femur is the longest bone in the human body.")
    assert relevant > 0.5 > irrelevant, (relevant, irrelevant)


def test_a_multi_token_candidate_gets_minus_infinity(generator):
    lp = generator.next_token_logprobs([Message("user", "Say hi.")], ["Hello", "Vitamin C"])
    assert lp["Vitamin C"] == -math.inf and math.isfinite(lp["Hello"])


def test_short_generation_reports_usage_and_streams_the_same_text(generator):
    chat = [Message("user", "In one sentence: what does vitamin C deficiency cause?")]
    gen = generator.generate(chat, max_tokens=16)
    assert gen.prompt_tokens > 10 and 0 < gen.completion_tokens <= 16
    assert gen.finish_reason in {"stop", "length"} and gen.text.strip()
    assert (gen.finish_reason == "length") == (gen.completion_tokens == 16)
    assert "".join(generator.stream(chat, max_tokens=16)) == gen.text  # greedy: deterministic


def test_stop_sequences_and_timeout(generator):
    chat = [Message("user", "Count from 1 to 9, separated by commas and spaces. Only the numbers.")]
    text = generator.generate(chat, max_tokens=30, stop=["5"]).text
    assert "4" in text and "5" not in text and "6" not in text
    generator.timeout_s = 1e-3
    try:
        with pytest.raises(GeneratorTimeout):
            generator.generate(chat, max_tokens=30)
        with pytest.raises(GeneratorTimeout):
            list(generator.stream(chat, max_tokens=30))
    finally:
        generator.timeout_s = None


_PASSAGES = {
    "cap": "Low severity CAP (CURB-65 0-1): amoxicillin 500 mg TDS orally for 5 days.",
    "af": "The CHA2DS2-VASc score is the recommended tool for assessing stroke risk in patients with AF.",
}
_ASKED = {
    "cap": "What oral antibiotic is first for low-severity CAP?",
    "af": "Which score guides anticoagulation in AF?",
}
_DETERMINISM_SCRIPT = """
import json, sys
from core.paths import Paths
from rag.generate.llamacpp import LlamaCppGenerator
from rag.generate.models import DEFAULT_GENERATOR, fetch_model
sys.path.insert(0, "tests/e2e")
from test_llamacpp import rag_prompt
path = fetch_model(Paths.from_env().model_dir, DEFAULT_GENERATOR, progress=False)
gen = LlamaCppGenerator(path, n_ctx=2048)
print(json.dumps(gen.generate(rag_prompt("cap"), max_tokens=40).text))
"""


def rag_prompt(name: str) -> list[Message]:
    from core.types import Hit
    from rag.generate.prompts import rag_messages
    from tests.helpers import make_chunk

    text = _PASSAGES[name]
    chunk = make_chunk(f"{name}#0", text, title=name.upper(), section=(), url="", license="")
    return rag_messages(_ASKED[name], [Hit(chunk=chunk, score=1.0, rank=1, retriever="test")])


def test_an_answer_does_not_depend_on_the_question_before_it_or_the_process(generator):
    """Issue 31: llama.cpp's prefix reuse made a prompt's logits depend on the previous prompt.
    One question asked first, after another question, again, and in a new process: the same
    next-token distribution to the bit, and the same greedy answer."""
    import json
    import subprocess
    import sys

    first_logprobs = generator.next_token_logprobs(rag_prompt("cap"), ["The", "Amoxicillin", "A"])
    first = generator.generate(rag_prompt("cap"), max_tokens=40).text
    generator.generate(rag_prompt("af"), max_tokens=40)  # shares the system turn and the layout
    assert generator.next_token_logprobs(rag_prompt("cap"), ["The", "Amoxicillin", "A"]) == first_logprobs
    assert generator.generate(rag_prompt("cap"), max_tokens=40).text == first
    assert first.strip()  # some answer (the model may also say the evidence is insufficient)
    fresh = subprocess.run(
        [sys.executable, "-c", _DETERMINISM_SCRIPT], capture_output=True, text=True, check=True, timeout=600
    )
    assert json.loads(fresh.stdout.strip().splitlines()[-1]) == first


_STATE_SCRIPT = """
import json, sys
from pathlib import Path
from core.paths import Paths
from rag.generate import prefix_states
from rag.generate.llamacpp import LlamaCppGenerator
from rag.generate.models import DEFAULT_GENERATOR, fetch_model
sys.path.insert(0, "tests/e2e")
from test_llamacpp import rag_prompt
restored = []
original = prefix_states.PrefixStates.restore
def spy(self, llm, tokens):
    restored.append(original(self, llm, tokens))
    return restored[-1]
prefix_states.PrefixStates.restore = spy
path = fetch_model(Paths.from_env().model_dir, DEFAULT_GENERATOR, progress=False)
gen = LlamaCppGenerator(path, n_ctx=2048, state_dir=Path(sys.argv[1]))
logprobs = gen.next_token_logprobs(rag_prompt("cap"), ["The", "Amoxicillin", "A"])
text = gen.generate(rag_prompt("cap"), max_tokens=40).text
print(json.dumps({"restored": restored, "logprobs": logprobs, "text": text}))
"""


def test_the_system_turn_saved_by_one_process_restores_exactly_in_another(generator, tmp_path):
    """Issue 32: a cold process restores the system turn's evaluated state from disk instead of
    evaluating it again; the answer's logits and text are those of evaluating it afresh."""
    import json
    import subprocess
    import sys

    def run() -> dict:
        done = subprocess.run(
            [sys.executable, "-c", _STATE_SCRIPT, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    fresh_logprobs = generator.next_token_logprobs(rag_prompt("cap"), ["The", "Amoxicillin", "A"])
    fresh_text = generator.generate(rag_prompt("cap"), max_tokens=40).text
    saving, restoring = run(), run()
    assert saving["restored"] == [False] and restoring["restored"] == [True]
    assert len(list(tmp_path.glob("*.session"))) == 1
    for got in (saving, restoring):
        assert got["logprobs"] == fresh_logprobs and got["text"] == fresh_text


def test_a_damaged_state_file_is_replaced_and_the_prefix_evaluated_again(generator, tmp_path):
    from rag.generate.llama_scoring import settle_prefix
    from rag.generate.prefix_states import PrefixStates

    llm = generator._model()
    tokens, fixed = generator._prompt(llm, rag_prompt("cap"), room=1)
    states = PrefixStates(tmp_path, {"test": "damaged"})
    states.path(tokens[:fixed]).write_bytes(b"not a llama.cpp session file")
    llm.reset()
    assert not states.restore(llm, tokens[:fixed])
    assert not states.path(tokens[:fixed]).exists()  # deleted, not trusted again
    assert settle_prefix(llm, tokens, fixed, states) == fixed  # evaluated afresh and saved
    assert states.path(tokens[:fixed]).stat().st_size > 1_000_000
    llm.reset()
    assert states.restore(llm, tokens[:fixed]) and llm.n_tokens == fixed
    assert list(llm.input_ids[:fixed]) == tokens[:fixed]


def test_the_thread_count_changes_no_logit(generator):
    """Issue 32: the thread count follows the load (``free_cpus``), so it must not change a
    result: the same prompt's next-token distribution with 1 and 2 threads, to the bit."""
    chosen = generator.threads
    try:
        runs = []
        for threads in (1, 2, 1):
            generator.threads, generator._threads_now = threads, None
            generator._model().reset()  # nothing reused: the whole prompt evaluated at this count
            runs.append(generator.next_token_logprobs(rag_prompt("af"), ["The", "CHA", "A"]))
        assert runs[0] == runs[1] == runs[2]
    finally:
        generator.threads, generator._threads_now = chosen, None
