"""Install the checkout's datasets.py as the module ``tinyunits_datasets``.

``datasets`` is the import name of Hugging Face's package: installed under that
name, datasets.py would shadow it, or be shadowed by it, in any site-packages
holding both. The lessons import the file as ``datasets`` from the checkout, so
it keeps its name there; installed, it takes tinyunits' own prefix.

Why a top-level ``tinyunits_datasets`` and not ``tinyunits.datasets``: the file
lives beside the package, not in it, and a ``tinyunits.datasets`` that exists
only once installed would be a module that a reader of the checkout cannot find
and that ``import tinyunits.datasets`` from the checkout cannot load.

setup.cfg maps the name to the file (``package_dir``: tinyunits_datasets =
datasets). setuptools' editable installs read that entry as it is, but its
build_py looks for a top-level module in a file of the module's own name; the
command below looks through the same entry, so a wheel holds the file as
``tinyunits_datasets.py``.
"""
from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    """build_py that finds each top-level module ``name`` in ``package_dir[name] + ".py"``."""

    def find_modules(self):
        """(package, module, source file) of every module in ``py_modules``."""
        return [("", name, self.package_dir.get(name, name) + ".py") for name in self.py_modules]


setup(cmdclass={"build_py": BuildPy})
