"""Benchmarks of the Ray engine: sharded builds and distributed evaluation.

Run each by name: ``medcite bench NAME --help`` (``medcite/commands/programs.py``)."""
