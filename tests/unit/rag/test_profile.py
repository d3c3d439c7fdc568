import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from rag.profile import available_profiles, load_profile

REPO = Path(__file__).resolve().parents[3]


def test_packaged_profiles_load_and_default_is_the_cited_chain():
    assert {"default", "fast", "server"} <= set(available_profiles())
    for name in available_profiles():
        assert load_profile(name).name == name
    default = load_profile()
    assert default.retrieval.mode == "hybrid" and default.rerank.backend == "trained"
    assert default.generator.backend == "llama-cpp"
    # the evidence threshold is the one chosen on the abstention dev set, on the default corpus
    dev = REPO / "docs" / "results" / "abstention" / "evidence_threshold_dev.json"
    chosen = json.loads(dev.read_text(encoding="utf-8"))
    assert default.rerank.threshold == chosen["chosen"]["threshold"]
    assert load_profile("server").rerank == default.rerank
    assert load_profile("server").quote == default.quote == load_profile("judged").quote
    assert default.reformulation.kind == "none"  # off by default


def test_a_typo_is_an_error_not_a_silent_default(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("[rerank]\nthreshhold = 0.3\n")
    with pytest.raises(ConfigError, match=r"rerank\.threshhold"):
        load_profile(path)


def test_out_of_range_values_and_unknown_names_are_refused(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[retrieval]\nmode = "telepathy"\n[rerank]\nthreshold = 2.0\n')
    with pytest.raises(ConfigError) as err:
        load_profile(path)
    assert "retrieval.mode" in str(err.value) and "rerank.threshold" in str(err.value)
    with pytest.raises(ConfigError, match="choose one of"):
        load_profile("nope")
    (tmp_path / "broken.toml").write_text("[retrieval\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_profile(tmp_path / "broken.toml")


def test_the_support_policy_defaults_to_drop_and_reaches_the_pipeline(tmp_path, bm25_paths):
    from rag.assemble import assemble
    from tests.helpers import LetterModel

    assert load_profile().verify.policy == "drop"
    bad = tmp_path / "bad.toml"
    bad.write_text('[verify]\npolicy = "ignore"\n')
    with pytest.raises(ConfigError, match=r"verify\.policy"):
        load_profile(bad)
    mine = tmp_path / "mine.toml"
    mine.write_text('[retrieval]\nmode = "bm25"\n[rerank]\nbackend = "none"\n[verify]\npolicy = "flag"\n')
    assembled = assemble(load_profile(mine), bm25_paths, generator=LetterModel())
    try:
        assert assembled.pipeline.settings.support_policy == "flag"
        assert assembled.pipeline.verifier is None  # a BM25-only index: the gate labels sentences unverified
    finally:
        assembled.close()


def test_the_sentence_budget_is_off_by_default_and_reaches_the_pipeline(tmp_path, bm25_paths):
    from rag.assemble import assemble
    from tests.helpers import LetterModel

    assert load_profile().rerank.sentence_budget is None
    too_small = tmp_path / "small.toml"
    too_small.write_text("[rerank]\nsentence_budget = 8\n")
    with pytest.raises(ConfigError, match=r"rerank\.sentence_budget"):
        load_profile(too_small)
    for budget, line in ((96, "sentence_budget = 96\n"), (None, "")):
        mine = tmp_path / "mine.toml"
        mine.write_text(f'[retrieval]\nmode = "bm25"\n[rerank]\nbackend = "trained"\n{line}')
        assembled = assemble(load_profile(mine), bm25_paths, generator=LetterModel())
        try:
            assert assembled.pipeline.settings.sentence_budget == budget
        finally:
            assembled.close()


@pytest.mark.parametrize("backend", ["none", "llm"])
def test_a_sentence_budget_without_the_trained_reranker_is_refused_at_assembly(tmp_path, bm25_paths, backend):
    from rag.assemble import assemble
    from tests.helpers import LetterModel

    mine = tmp_path / "mine.toml"
    mine.write_text(f'[retrieval]\nmode = "bm25"\n[rerank]\nbackend = "{backend}"\nsentence_budget = 96\n')
    profile = load_profile(mine)  # a valid profile: the combination is what assembly refuses
    fix = r'set rerank\.backend = "trained" or remove rerank\.sentence_budget'
    with pytest.raises(ConfigError, match=fix):
        assemble(profile, bm25_paths, generator=LetterModel())


def test_the_quote_pool_reaches_the_pipeline_settings(tmp_path):
    from rag.pipeline import PipelineSettings

    mine = tmp_path / "mine.toml"
    mine.write_text("[quote]\nthreshold = 0.5\npool_threshold = 0.1\npool_keep = 6\n")
    settings = PipelineSettings.from_profile(load_profile(mine))
    assert settings.quote_pool == (0.1, 6)
    bad = tmp_path / "bad.toml"
    bad.write_text("[quote]\npool_keep = 0\n")
    with pytest.raises(ConfigError, match=r"quote\.pool_keep"):
        load_profile(bad)
