"""MIRAGE's published predictions as medcite runs (``predictions.py``, ``medcite eval reference``),
their answers re-read strictly by ``parse.py``."""
