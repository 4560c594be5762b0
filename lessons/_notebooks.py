"""Write notebooks/NN_name.ipynb for every lesson (`make notebooks`), outputs cleared.

    python lessons/_notebooks.py [OUT_DIR] [LESSON ...]

Each notebook is its lesson's `# %%` script read by jupytext, with one set-up cell in
front: a notebook runs with its own folder as the working directory, where the script
would have found lessons/ beside it, so that cell puts the checkout's lessons/ on
sys.path (the folder above notebooks/, or TINYUNITS_ROOT when set, as in Colab).
The lesson's mode comes from TINYUNITS_LESSON_MODE (tiny | quick | full; default quick).
"""
import os
import sys

import jupytext
from nbformat.v4 import new_code_cell, new_markdown_cell

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SETUP_NOTE = (
    "*Notebook set-up.* This notebook was made from `lessons/{name}.py` by `make notebooks`; "
    "edit the script, not the notebook. The cell below finds the checkout: the folder above "
    "`notebooks/`, or the environment variable `TINYUNITS_ROOT` (in Colab, the path of "
    "your clone: `%env TINYUNITS_ROOT=/content/drive/MyDrive/tinyunits`). Choose the size of the run with "
    "`%env TINYUNITS_LESSON_MODE=tiny` (seconds), `quick` (the default) or `full`.")
SETUP_CODE = """import os, sys
root = os.environ.get("TINYUNITS_ROOT", os.pardir)
sys.path.insert(0, os.path.join(root, "lessons"))"""


def lessons():
    folder = os.path.join(ROOT, "lessons")
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f[:2].isdigit() and f.endswith(".py"))


def write_notebook(script: str, out_dir: str) -> str:
    name = os.path.splitext(os.path.basename(script))[0]
    notebook = jupytext.read(script, fmt="py:percent")
    notebook.cells[1:1] = [new_markdown_cell(SETUP_NOTE.format(name=name)),
                           new_code_cell(SETUP_CODE)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    notebook.metadata.pop("jupytext", None)  # a plain notebook, not paired with the script
    path = os.path.join(out_dir, name + ".ipynb")
    jupytext.write(notebook, path, fmt="ipynb")
    return path


if __name__ == "__main__":
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "notebooks")
    os.makedirs(out_dir, exist_ok=True)
    for script in sys.argv[2:] or lessons():
        print(write_notebook(script, out_dir))
