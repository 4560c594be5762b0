"""The API pages show every docstring as written: an equation's aligned lines stay a
block, and `k*n` stays `k*n` (Markdown, which the site renders docstrings with, would
reflow the first into a paragraph and read the second's stars as emphasis)."""
import importlib
import inspect
import pathlib
import re

import pytest

markdown = pytest.importorskip("markdown", reason="the API pages need the `site` extra")

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULES = sorted({line.split()[1] for page in (ROOT / "docs" / "api").glob("*.md")
                  for line in page.read_text().splitlines() if line.startswith("::: ")})
MISREAD = [(re.compile(r"\w<(em|strong)>|</(em|strong)>\w"), "a * inside a word read as emphasis"),
           (re.compile(r"<p>(?:(?!</p>).)*\S {3,}\S", re.S), "aligned lines reflowed into a paragraph")]


def docstrings(name):
    """(where, docstring) of a module and of the public classes, functions and methods it defines."""
    module = importlib.import_module(name)
    yield name, module.__doc__
    for attr, obj in vars(module).items():
        if attr.startswith("_") or getattr(obj, "__module__", None) != name:
            continue
        yield f"{name}.{attr}", obj.__doc__
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if not member.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)):
                    yield f"{name}.{attr}.{member}", value.__doc__


def misreadings(text):
    html = markdown.markdown(inspect.cleandoc(text), extensions=["tables", "admonition"])
    return [f"{why}: ...{html[max(0, m.start() - 30):m.end() + 30]!r}..."
            for rx, why in MISREAD for m in rx.finditer(html)]


def test_the_api_pages_document_modules():
    assert len(MODULES) > 20, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstrings_render_as_written(name):
    found = [f"{where}: {problem}" for where, doc in docstrings(name) if doc
             for problem in misreadings(doc)]
    assert not found, "\n".join(found)


def test_the_check_sees_a_misread_docstring():
    assert misreadings("A has (out*in - in) biases and n*m additions.")
    assert misreadings("Dense, eq. (4):   y = W phi(x)\nBackward:\n                  dW = g phi(x)")
    assert not misreadings("Summary.\n\n    A has `(out*in - in)` biases and *dead* neurons:\n\n"
                           "        y = W*x  (eq. 4)\n    ")
