"""How well the faithfulness metric's NLI step separates supported from false claims: the labelled
set (``labelled.py``), the scoring (``separation.py``, the entry point), the figures
(``report.py``) and the report's files (``page.py``)."""
