"""Evaluation of medcite: benchmark sets in, run directories and reports out.

- ``types.py``, ``records.py``: the vocabulary every package below shares: what a loader returns
  (``McqItem``, ``RetrievalSet``) and what a run writes per item (``ItemRecord``).
- ``datasets/``: benchmark loaders by name (``load_mcq``, ``load_freetext``, ``load_retrieval``)
  and the labelled support set (``support_set.py``, also read by ``training/``); ``files/``
  reads the benchmark files people bring (``mcq:PATH``, ``qa:PATH``).
- ``metrics/``: pure metric functions (accuracy, retrieval, classification) and paired statistics.
- ``engine/``: ``medcite eval run``: config, the run loop, the generation cache, Ray; ``judge/``
  (free-text answers judged, and the judge's cache) and ``report/`` (summary, report, compare).
- ``robustness/``, ``leakage/``: the perturbed copies of a set and the benchmark-leakage check,
  each with the section it adds to a run's report.
- ``studies/``: one-off measurements with their own entry points (faithfulness, ragas, the MIRAGE
  reference, the support verifier).
- ``configs/``: example eval configs; ``ragas_env/``: the ragas scorer's own environment.
"""
