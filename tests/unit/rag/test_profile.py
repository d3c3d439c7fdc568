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
    mine.write_text(
        '[retrieval]\nmode = "bm25"\n[rerank]\nbackend = "none"\nthreshold = "unset"\n'
        '[verify]\npolicy = "flag"\n[quote]\nthreshold = "unset"\n'
    )
    assembled = assemble(load_profile(mine), bm25_paths, generator=LetterModel())
    try:
        assert assembled.pipeline.profile.verify.policy == "flag"
        assert assembled.pipeline.verifier is None  # a BM25-only index: the gate labels sentences unverified
    finally:
        assembled.close()


def _fields(model: type) -> dict[str, object]:
    """Every setting of a profile model, by dotted name, with its field."""
    from pydantic import BaseModel

    out: dict[str, object] = {}
    for key, field in model.model_fields.items():
        inner = field.annotation
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            out |= {f"{key}.{k}": f for k, f in _fields(inner).items()}
        else:
            out[key] = field
    return out


def _settings(raw: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            out |= _settings(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_default_toml_is_the_one_home_of_every_default():
    """No profile model field has a default in the code; default.toml sets every one of them
    (``"unset"`` where it has no value), so the code and the file cannot disagree."""
    import tomllib

    from pydantic_core import PydanticUndefined

    from rag.profile import DEFAULT_FILE, Profile

    fields = _fields(Profile)
    with_defaults = [k for k, f in fields.items() if f.default is not PydanticUndefined or f.default_factory]
    assert with_defaults == []
    written = _settings(tomllib.loads(DEFAULT_FILE.read_text(encoding="utf-8")))
    assert set(fields) - {"name"} == set(written)


def test_every_other_profile_states_only_what_it_changes(tmp_path):
    import tomllib

    from rag.profile import PROFILES_DIR, UNSET

    default = _settings(load_profile("default").model_dump(mode="json"))
    for path in PROFILES_DIR.glob("*.toml"):
        if path.stem == "default":
            continue
        changes = _settings(tomllib.loads(path.read_text(encoding="utf-8")))
        same = [
            k for k, v in changes.items() if k != "description" and default[k] == (None if v == UNSET else v)
        ]
        assert same == [], path.name
    mine = tmp_path / "mine.toml"
    mine.write_text('[rerank]\nkeep = 2\n[quote]\nthreshold = "unset"\n')
    profile = load_profile(mine)
    assert (profile.name, profile.rerank.keep, profile.quote.threshold) == ("mine", 2, None)
    assert profile.rerank.threshold == load_profile().rerank.threshold  # the rest from default.toml


def test_a_missing_profile_file_is_not_found_and_unset_is_only_for_settings_that_may_be_unset(tmp_path):
    with pytest.raises(ConfigError, match="profile file not found"):
        load_profile(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text('[rerank]\nkeep = "unset"\n')
    with pytest.raises(ConfigError, match=r"rerank\.keep"):
        load_profile(bad)


def test_a_path_like_profile_that_does_not_exist_is_a_file_not_found_with_its_path(tmp_path):
    for given in (tmp_path / "nope.toml", f"{tmp_path}/lower", "configs/lower"):
        with pytest.raises(ConfigError, match="profile file not found") as err:
            load_profile(given)
        assert str(Path(given).absolute()) in str(err.value) and "no profile" not in str(err.value)
    with pytest.raises(ConfigError, match=r"--profile default$"):
        load_profile(tmp_path / "default.toml")  # a packaged name written as a file


def test_a_mistyped_key_section_or_profile_name_says_what_was_meant(tmp_path):
    path = tmp_path / "typo.toml"
    path.write_text("[rerank]\ntreshold = 0.3\n[reranker]\nkeep = 2\n[quote]\nzzz = 1\n")
    with pytest.raises(ConfigError) as err:
        load_profile(path)
    message = str(err.value)
    assert "rerank.treshold: unknown key; did you mean 'rerank.threshold'?" in message
    assert "reranker: unknown key; did you mean 'rerank'?" in message
    assert "quote.zzz: unknown key; the keys here are judge, reader_path, threshold" in message
    with pytest.raises(ConfigError, match="did you mean 'default'"):
        load_profile("defualt")
