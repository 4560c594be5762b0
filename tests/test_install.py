"""A non-editable install of tinyunits (setup.py, setup.cfg): the data code is the module
tinyunits_datasets, and nothing is installed as `datasets`, the name of Hugging Face's
package.

The wheel is built offline (no build isolation, no index) from a copy of the build's
inputs, so that the build writes nothing into the checkout, and installed with
``pip install --target``; a fresh interpreter with that folder first on sys.path,
run outside the checkout, imports the installed copy.
"""
import importlib.machinery
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import datasets

pytestmark = pytest.mark.backend_free("builds and imports a package; no array leaves NumPy")

ROOT = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("setup.py", "setup.cfg", "pyproject.toml", "README.md", "datasets.py",
                "tinyunits")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A folder holding tinyunits as pip installs it from the checkout's sources."""
    src, site = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("site")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def run_installed(site, code):
    """Run ``code`` in a fresh interpreter, outside the checkout, with ``site`` first on
    sys.path; return what it printed as JSON."""
    done = subprocess.run([sys.executable, "-I", "-c",
                           f"import sys; sys.path.insert(0, {str(site)!r})\n{code}"],
                          cwd=site.parent, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_data_code_is_installed_as_tinyunits_datasets_and_nothing_as_datasets(site):
    top_level = {p.name for p in site.iterdir() if not p.name.endswith(".dist-info")}
    assert top_level - {"__pycache__"} == {"tinyunits", "tinyunits_datasets.py"}
    assert importlib.machinery.PathFinder.find_spec("datasets", [str(site)]) is None
    assert (site / "tinyunits_datasets.py").read_bytes() == (ROOT / "datasets.py").read_bytes()
    record = next(site.glob("tinyunits-*.dist-info")) / "RECORD"
    assert not [line for line in record.read_text().splitlines() if line.startswith("datasets")]


def test_the_installed_data_code_imports_and_generates_a_data_set(site, tmp_path):
    got = run_installed(site, f"""
import json, tinyunits_datasets as d
x, y = d.two_moons(n=50, noise=0.1, seed=3)
try:
    d.load_mnist(root={str(tmp_path)!r})
except d.DatasetNotFoundError as exc:
    missing = str(exc)
print(json.dumps({{"file": d.__file__, "x": x.tolist(), "y": y.tolist(), "missing": missing}}))
""")
    assert Path(got["file"]) == site / "tinyunits_datasets.py"
    x, y = datasets.two_moons(n=50, noise=0.1, seed=3)
    np.testing.assert_array_equal(np.array(got["x"], dtype=np.float32), x)
    np.testing.assert_array_equal(got["y"], y)
    # the command an installed copy names is the module, not a datasets.py it does not have
    assert "python -m tinyunits_datasets download mnist" in got["missing"]
    assert "datasets.py" not in got["missing"]
