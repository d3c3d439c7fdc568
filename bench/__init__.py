"""Benchmark scripts: each writes JSON under docs/results/ and `bench.report` turns them into
docs/benchmarks.md. Run everything with ``medcite bench run-all`` (``make bench``)."""
