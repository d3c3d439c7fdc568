"""The run engine behind ``medcite eval run``: a config (``config.py``, ``quick_config.py``) becomes
conditions run item by item (``runner.py`` -> ``conditions.py``; ``answers_run.py``,
``retrieval_run.py``; Ray in ``engine_ray.py``), cached (``generation_cache.py``,
``judge_cache.py``), written to a run directory (``rundir.py``) and summarised (``summary.py``,
``compare.py``, ``plots.py``; free text judged by ``answer_quality.py``). ``validate.py`` is
``medcite eval validate``."""
