"""Benchmark scripts: each writes JSON under docs/results/ and `bench.report` turns them into
docs/benchmarks.md. Run everything with ``python -m bench.run_all`` (``make bench``)."""
