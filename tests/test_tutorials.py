"""Every tutorial runs as a script (so none of them rots)."""
import pathlib
import runpy

import pytest

TUTORIALS = sorted((pathlib.Path(__file__).parent.parent / "tutorials").glob("[0-9]*.py"))


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs(path, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("MTE_TUTORIAL_FAST", "1")
    monkeypatch.setenv("MTE_TUTORIAL_OUT", str(tmp_path))
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip()
