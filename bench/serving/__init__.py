"""Benchmarks of the HTTP API and chat page under load: latency, concurrency, live chat.

Run each by name: ``medcite bench NAME --help`` (``medcite/commands/programs.py``)."""
