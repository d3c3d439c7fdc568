"""The run engine behind ``medcite eval run``: a config (``config.py``, ``quick_config.py``) becomes
conditions run item by item (``runner.py`` -> ``conditions.py``; ``answers_run.py``,
``retrieval_run.py``; Ray in ``engine_ray.py``), the model's answers cached
(``generation_cache.py``), written to a run directory (``rundir.py``), free text judged
(``judge/``) and the run summarised and compared (``report/``). ``validate.py`` is
``medcite eval validate``."""
