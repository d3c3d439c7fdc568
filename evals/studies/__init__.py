"""One-off studies, each with one entry point:

- ``faithfulness/``: ``medcite study faithfulness-separation``
- ``ragas/``: ``medcite study ragas-compare``
- ``reference/``: ``medcite eval reference`` (``predictions.import_reference``)
- ``verifier.py``: ``medcite study verifier``
"""
