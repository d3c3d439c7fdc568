"""medcite's answer-quality metrics beside the ragas package's: ``samples.py`` exports a run's
answers, ``compare.py`` (the entry point) joins both sides' scores into a report."""
