"""The HTTP API serving a sharded index: ``/v1/retrieve`` and a cited chat answer, over a live server.

The sharded copy of the guideline index (tests/conftest.py ``bm25_paths``) is served with the
scripted model of tests/api/support.py; its hits must be the unsharded index's.
"""

from __future__ import annotations

import httpx
import pytest

from api.settings import ApiSettings
from core.types import Filters
from indexes.reshard import reshard
from indexes.shard_search import ShardedBm25
from rag.indexing import retrieve
from tests.api.support import KEY, ScriptedGenerator, client, live_server, scripted_assembler

QUERY = "anticoagulation atrial fibrillation"
REPLY = "The CHA2DS2-VASc score guides anticoagulation in atrial fibrillation [1]."


@pytest.fixture(scope="module")
def served(tmp_path_factory, bm25_paths):
    paths = bm25_paths.model_copy(update={"data_dir": tmp_path_factory.mktemp("sharded-api")})
    reshard(bm25_paths.indexes_dir / "default", paths.indexes_dir / "default", 4)
    settings = ApiSettings(env="production", api_keys=[KEY], profiles=["fast"], rate_limit_per_minute=0)
    with live_server(settings, scripted_assembler(paths, ScriptedGenerator(REPLY))) as (url, app):
        yield url, app


def test_retrieve_from_a_sharded_index_returns_the_unsharded_hits(served, bm25_paths):
    url, app = served
    assert isinstance(app.state.medcite.get("fast").assembled.index.lexical, ShardedBm25)
    response = httpx.post(
        f"{url}/v1/retrieve",
        json={"query": QUERY, "k": 5, "mode": "bm25"},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert response.status_code == 200
    data = response.json()["data"]
    direct = retrieve(bm25_paths, "default", QUERY, k=5, mode="bm25", filters=Filters())
    assert len(data) == 5
    assert [h["chunk_id"] for h in data] == [h.chunk.chunk_id for h in direct]
    assert [h["score"] for h in data] == pytest.approx([h.score for h in direct], rel=1e-5)


def test_chat_answer_cites_a_chunk_of_the_sharded_index(served, bm25_paths):
    url, _ = served
    result = client(url).chat.completions.create(
        model="fast", messages=[{"role": "user", "content": QUERY}], max_tokens=64
    )
    extra = result.model_extra
    assert result.choices[0].message.content == REPLY
    direct = retrieve(bm25_paths, "default", QUERY, k=3, mode="bm25", filters=Filters())
    assert [e["chunk_id"] for e in extra["evidence"]] == [h.chunk.chunk_id for h in direct]
    assert extra["citations"][0]["quote"] == direct[0].chunk.text
