"""What a finished run tells: ``summary.py`` computes ``metrics.json`` and writes ``report.md``
(with the figures of ``plots.py``), and ``compare.py`` holds runs and conditions side by side with
paired statistics (``medcite eval compare``)."""
