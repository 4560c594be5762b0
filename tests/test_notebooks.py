"""`make notebooks` turns every lesson into a notebook; the lesson-0 notebook runs (tiny)."""
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))
jupytext = pytest.importorskip("jupytext")


def notebooks_module():
    spec = importlib.util.spec_from_file_location("_notebooks", ROOT / "lessons" / "_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_lesson_becomes_a_notebook_with_outputs_cleared(tmp_path):
    make = notebooks_module()
    paths = [pathlib.Path(make.write_notebook(str(s), str(tmp_path))) for s in LESSONS]
    assert [p.name for p in paths] == [s.stem + ".ipynb" for s in LESSONS]
    for path, script in zip(paths, LESSONS):
        cells = json.loads(path.read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(not c["outputs"] and c["execution_count"] is None for c in code), path.name
        assert "TINYUNITS_ROOT" in "".join(code[0]["source"]), f"{path.name}: no set-up cell first"
        assert "from _lesson import" in "".join(code[1]["source"]), path.name
        def code_lines(text):
            return [line for line in text.splitlines() if line.strip() and line[0] != "#"]
        body = "\n".join("".join(c["source"]) for c in code[1:])
        assert code_lines(body) == code_lines(script.read_text()), path.name


def test_lesson0_notebook_runs_in_tiny_mode(tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import nbformat
    make = notebooks_module()
    path = make.write_notebook(str(ROOT / "lessons" / "00_engine.py"), str(tmp_path))
    monkeypatch.setenv("TINYUNITS_LESSON_MODE", "tiny")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("TINYUNITS_ROOT", raising=False)
    notebook = nbformat.read(path, as_version=4)
    # Run from a folder one level below the checkout, as notebooks/ is.
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "tests")}}).execute()
    printed = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                      for o in c.outputs)
    assert "mode tiny" in printed and "ours" in printed
    assert "NO" not in printed.split("holds", 1)[1], printed
