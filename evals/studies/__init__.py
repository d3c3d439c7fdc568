"""One-off studies, each with one entry point:

- ``faithfulness/``: ``python -m evals.studies.faithfulness.separation``
- ``ragas/``: ``python -m evals.studies.ragas.compare``
- ``reference/``: ``medcite eval reference`` (``predictions.import_reference``)
- ``verifier.py``: ``python -m evals.studies.verifier``
"""
