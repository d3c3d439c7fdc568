"""The top floor: the ``medcite`` command, which composes every other package.

Nothing in ``rag``, ``corpora``, ``indexes``, ``evals``, ``api`` or ``training`` imports it.
"""
