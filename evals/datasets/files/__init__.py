"""Benchmark files people bring themselves (``mcq:PATH``, ``qa:PATH``), by the layer that reads them.

``tables.py`` reads the rows of any file format (JSON Lines, CSV/TSV, parquet, Arrow, Hugging Face
folders, compressed or not), ``json_layouts.py`` the rows of a JSON file in any pandas layout, and
``user_sets.py`` recognises the question shape, applies a column mapping and validates each row
into items, listing the rows it skips.
"""
