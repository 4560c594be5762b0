"""The package's imports, read from its source (AST): the book never imports the
speed package beside it.

The book is tinyunits/ without fast/, course/ and sweep*: what a student reads.
tinyunits/__init__.py, the package's face, is not part of it: it installs the
drop-ins (fast.install) so that a full install runs them.
"""
import ast
import pathlib

import pytest

pytestmark = pytest.mark.backend_free("reads source files only")

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tinyunits"
BESIDE = ("fast", "course", "sweep")


def module_name(path: pathlib.Path, root=ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: pathlib.Path, root=ROOT):
    """(dotted module, line) for every import of the file (under root), relative ones
    resolved; for `from pkg import name` both pkg and pkg.name (name may be a module)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) + 1 - node.level]
                base = ".".join(anchor + ([base] if base else []))
            yield base, node.lineno
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def book_files():
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p != PACKAGE / "__init__.py"
            and not p.relative_to(PACKAGE).parts[0].startswith(BESIDE)]


def speed_imports(paths, root=ROOT):
    """'file:line imports module' for each import of tinyunits.fast in the files."""
    return [f"{path.relative_to(root)}:{line} imports {target}" for path in paths
            for target, line in imported(path, root)
            if target == "tinyunits.fast" or target.startswith("tinyunits.fast.")]


def test_the_book_never_imports_the_speed_package():
    assert len(book_files()) > 30  # the walk finds the book
    wrong = speed_imports(book_files())
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("line", ["from ..fast import threads", "from .. import fast",
                                  "import tinyunits.fast", "from ..fast.buffers import borrow",
                                  "from tinyunits.fast.dac import DACLinearFn"])
def test_the_walk_finds_each_spelling_of_an_import_of_the_speed_package(tmp_path, line):
    """The test above can fail: a unit with one such line planted is caught."""
    planted = tmp_path / "tinyunits" / "units" / "dac.py"
    planted.parent.mkdir(parents=True)
    planted.write_text((PACKAGE / "units" / "dac.py").read_text() + "\n" + line + "\n")
    assert speed_imports([planted], tmp_path)
