"""Benchmarks of retrieval and reranking: corpora at scale, BM25 / dense /
hybrid / ivfpq contenders, the embedder, the rerankers, query latency.

Run each by name: ``medcite bench NAME --help`` (``medcite/commands/programs.py``)."""
