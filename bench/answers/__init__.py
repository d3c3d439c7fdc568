"""Benchmarks of the answer chain on question sets:
the clinician benchmark, quotes, abstention, judge prompts, evidence thresholds, generation.

Run each by name: ``medcite bench NAME --help`` (``medcite/commands/programs.py``)."""
