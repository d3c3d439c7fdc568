"""Free-text answers judged: ``answer_quality.py`` scores faithfulness, answer relevancy and context
precision and recall with a judge model (or, without one, the chain's citation precision and recall),
and ``cache.py`` keeps every judge call on disk, so a rerun asks only what is missing."""
