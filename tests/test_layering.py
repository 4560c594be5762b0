"""The package's imports, read from its source (AST), run one way:

- no circle among tinyunits' files, nor among its folders and top-level modules (a
  folder that imports another which imports it back is a circle a reader walks into);
- the book never imports what stands beside it: no module outside tinyunits/fast,
  tinyunits/course and tinyunits/sweep imports any of those three;
- no module of the package, the lessons, the tools or datasets.py imports another
  module's private name (`from m import _x`): what one file takes from another is
  that file's public face.
"""
import ast
import pathlib
import re

import pytest

pytestmark = pytest.mark.backend_free("reads source files only")

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tinyunits"
BESIDE = ("tinyunits.fast", "tinyunits.course", "tinyunits.sweep")


def module_name(path: pathlib.Path, root=ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: pathlib.Path, root=ROOT):
    """(imported module, names taken from it, line) for every import in the file, with
    relative imports resolved; `from pkg import sub` yields pkg.sub when sub is a module."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = tuple(alias.name for alias in node.names)
            modules = [n for n in names if is_module(f"{base}.{n}", root)]
            for n in modules:
                yield f"{base}.{n}", (), node.lineno
            if len(modules) < len(names):  # names defined in base itself
                yield base, tuple(n for n in names if n not in modules), node.lineno


def is_module(dotted: str, root=ROOT) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def package_files():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def file_graph():
    graph = {}
    for path in package_files():
        me = module_name(path)
        graph[me] = {target for target, _, _ in imports(path)
                     if target.startswith("tinyunits") and is_module(target) and target != me}
    return graph


def find_cycle(graph):
    """One cycle of the directed graph as a list of nodes, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def room(module: str) -> str:
    """The folder or top-level module a module belongs to: tinyunits.ops.conv -> tinyunits.ops."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_file_imports_itself_back():
    assert find_cycle(file_graph()) is None


def test_no_folder_imports_itself_back():
    rooms = {}
    for me, targets in file_graph().items():
        if me == "tinyunits":  # the package's face assembles everything
            continue
        rooms.setdefault(room(me), set()).update(
            room(t) for t in targets if room(t) != room(me) and t != "tinyunits")
    assert find_cycle(rooms) is None


def beside_imports(paths, root=ROOT):
    """'file:line imports module' for each import, in the book's files, of what stands
    beside the book (or of the package's face, which installs the speed package)."""
    wrong = []
    for path in paths:
        for target, _, line in imports(path, root):
            if target.startswith(BESIDE) or target == "tinyunits":
                wrong.append(f"{path.relative_to(root)}:{line} imports {target}")
    return wrong


def book_files():
    return [p for p in package_files()
            if module_name(p) != "tinyunits" and not module_name(p).startswith(BESIDE)]


def test_the_book_imports_nothing_that_stands_beside_it():
    assert len(book_files()) > 30  # the walk finds the book
    wrong = beside_imports(book_files())
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("line", ["from ..fast import threads", "from .. import fast",
                                  "import tinyunits.fast", "from ..fast.buffers import borrow",
                                  "from tinyunits.fast.dac import DACLinearFn",
                                  "from ..course import grade", "from .. import sweep",
                                  "import tinyunits"])
def test_each_spelling_of_such_an_import_is_caught(tmp_path, line):
    """The test above can fail: a unit with one such line planted is caught."""
    for folder in ("units", "fast", "course", "sweep"):
        (tmp_path / "tinyunits" / folder).mkdir(parents=True)
        (tmp_path / "tinyunits" / folder / "__init__.py").write_text("")
    (tmp_path / "tinyunits" / "__init__.py").write_text("")
    for name in ("threads", "buffers", "dac"):
        (tmp_path / "tinyunits" / "fast" / f"{name}.py").write_text("")
    (tmp_path / "tinyunits" / "course" / "grade.py").write_text("")
    planted = tmp_path / "tinyunits" / "units" / "dac.py"
    planted.write_text((PACKAGE / "units" / "dac.py").read_text() + "\n" + line + "\n")
    assert beside_imports([planted], tmp_path)


def test_no_module_takes_another_modules_private_name():
    files = package_files() + sorted((ROOT / "lessons").rglob("*.py")) \
        + sorted((ROOT / "tools").rglob("*.py")) + [ROOT / "datasets.py"]
    wrong = []
    for path in files:
        for target, names, line in imports(path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private += [part for part in target.split(".") if part.startswith("_")
                        and not part.startswith("__") and target.startswith("tinyunits")]
            if private:
                wrong.append(f"{path.relative_to(ROOT)}:{line} takes {private} from {target}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_the_cycle_finder_finds_a_planted_circle(kind):
    """The tests above can fail: a circle planted in a copy of the graph is found."""
    graph = {k: set(v) for k, v in file_graph().items()}
    if kind == "folder":
        graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    else:
        graph["tinyunits.tensor"].add("tinyunits.ops.arithmetic")
    assert find_cycle(graph) is not None


READING_PATH = ("tensor.py", "function.py", "ops/arithmetic.py", "units/{unit}.py", "module.py")


def reading_path_lines(unit: str) -> int:
    return sum(len((PACKAGE / part.format(unit=unit)).read_text().splitlines())
               for part in READING_PATH)


def test_the_readmes_reading_path_is_what_the_files_hold_and_short():
    """The README's table of lines on the path tensor -> function -> ops/arithmetic ->
    unit -> module states the files as they are, and each path stays a sitting's read."""
    rows = re.findall(r"^\| `units/(\w+)\.py` \| ([\d,]+) \|$", (ROOT / "README.md").read_text(),
                      re.M)
    assert {unit for unit, _ in rows} == {"dac", "two_argument", "tmaf", "hannet", "focusing"}
    for unit, stated in rows:
        assert int(stated.replace(",", "")) == reading_path_lines(unit), unit
        assert reading_path_lines(unit) <= 1100, unit
