"""The dense side of an index: text becomes vectors and vectors become a FAISS index.

``embedder.py`` (all-MiniLM-L6-v2: the plain-torch encoder of ``minilm.py``, run at query time
by ONNX Runtime from the export ``onnx_models.py`` keeps, which also runs the relevance and
support models) embeds texts,
``embedding_cache.py`` keeps each text's vector by content hash, ``index.py`` is ``DenseIndex``
(flat, hnsw, ivfpq) with its settings in ``params.py``, and ``ivf.py`` trains, fills and merges
the compressed ``ivfpq`` kind shard by shard.
"""
