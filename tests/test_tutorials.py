"""Every tutorial runs as a script (so none of them rots), in an empty working directory, and
leaves no file behind there or in the temporary folder; a folder named by MTE_TUTORIAL_OUT keeps
what a tutorial writes."""
import os
import pathlib
import runpy
import tempfile

import pytest

TUTORIALS = sorted((pathlib.Path(__file__).parent.parent / "tutorials").glob("[0-9]*.py"))


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in pathlib.Path(folder).rglob("*"))


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs_and_leaves_no_file_behind(path, monkeypatch, capsys, tmp_path):
    cwd, scratch = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    scratch.mkdir()
    monkeypatch.setenv("MTE_TUTORIAL_FAST", "1")
    monkeypatch.delenv("MTE_TUTORIAL_OUT", raising=False)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))   # where mkdtemp & co. write
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip()
    assert _files(cwd) == [], f"{path.name} wrote into the working directory"
    assert _files(scratch) == [], f"{path.name} left temporary files"


@pytest.mark.parametrize("name", ["05_optimizers.py", "08_training_digits.py"])
def test_a_named_output_folder_keeps_the_files(name, monkeypatch, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    monkeypatch.setenv("MTE_TUTORIAL_FAST", "1")
    monkeypatch.setenv("MTE_TUTORIAL_OUT", str(out))
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(TUTORIALS[0].parent / name), run_name="__main__")
    capsys.readouterr()
    kept = _files(out)
    assert any(f.endswith(".png") for f in kept), kept
    assert os.listdir(tmp_path) == ["out"]
