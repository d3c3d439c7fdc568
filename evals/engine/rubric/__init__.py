"""Rubric-graded runs (``[[rubric]]``): replies per arm, graded per criterion, scored and reported.

``run.py`` (the arms and the record per item), ``grade.py`` (matchers, else the judge),
``judge.py`` (the judge's prompt and JSON verdict), ``report.py`` (metrics.json) and
``tables.py`` (report.md).
"""
