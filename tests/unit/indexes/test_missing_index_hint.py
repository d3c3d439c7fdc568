"""A missing index, looked for from another folder: the error names the absolute folder and how
to build the index there or point MEDCITE_DATA_DIR elsewhere (the default ``./data`` is relative)."""

from __future__ import annotations

from medcite.cli import main


def test_run_from_another_folder_the_hint_names_the_absolute_data_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MEDCITE_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["retrieve", "sepsis", "--mode", "bm25"]) == 2
    error = capsys.readouterr().err
    data = tmp_path / "data"
    assert f"no index at {data / 'indexes' / 'default'} (the data folder is 'data', relative" in error
    assert f"build one there with: MEDCITE_DATA_DIR={data} medcite index build," in error
    assert "set MEDCITE_DATA_DIR to the data folder that has indexes/default" in error


def test_a_named_index_is_built_by_name_and_an_absolute_data_folder_is_not_called_relative(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path / "elsewhere"))
    assert main(["retrieve", "sepsis", "--mode", "bm25", "--name", "mine"]) == 2
    error = capsys.readouterr().err
    assert f"MEDCITE_DATA_DIR={tmp_path / 'elsewhere'} medcite index build --name mine," in error
    assert "relative" not in error
