"""Benchmark leakage: ``check.py`` scores whether an index holds an item's question or gold passage
near-verbatim; ``run.py`` is ``medcite eval leakage`` and the leaked/clean split of a run's report."""
