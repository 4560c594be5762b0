"""No solution where a student can read it: the student copy, and the course site as
`make site` builds it, hold no solution line of any exercise.

A solution line is a line of a marked solution region (`# BEGIN SOLUTION name` ...
`# END SOLUTION name`, code) or of a marked derivation (`BEGIN DERIVATION names` ...
`END DERIVATION names`, docstrings or a lesson's comment lines, the latter without their
`# `), with a code line's trailing `# comment` dropped and every run of whitespace made
one space. Two kinds of line are not counted, since they
give nothing away:
- a line with fewer than two names other than Python's keywords (`grads = []`, `)`);
- a line the library holds outside every region and derivation too
  (`xp = get_array_module(g)`): code the student copy ships anyway.
A solution line leaks if it appears, its whitespace made one space, in any text file
of the student copy or of the built site. A page is searched as it is and as text: JSON
strings decoded (the search index, the lessons' notebooks), HTML tags dropped and
entities unescaped (highlighted code puts every token of a line in a span of its own).
So a leak is caught whether it is copied, rendered, highlighted or indexed; a line
rewritten by hand is not, and neither is a solution in another language (that is why
the student copy leaves the drop-ins of exercises out, DAC's CUDA kernels with them:
course/source.py's drop_in_files).

A result written in another form (rewritten by hand, typeset, put in words) is what
the second check looks for: per exercise, a few formula signatures, the result as our
own code, docs and lessons write it (`SIGNATURES`), searched for in every text file of
the copy and the site after both are normalised alike (`formula`: multiplication
signs, TeX spacing and braces, comment marks dropped; spaces kept only between two
names, so `H g_z`, `H @ g_z` and `$H\\, g_{z}$` are one signature and `padding
self.a` does not hold `g self.a`). It finds only the forms listed, so each exercise
keeps one that its own solution or derivation writes, and a planted leak shows each
form is found, in a page, as HTML and in the search index.

This file is the teacher's (tests/test_course*.py): the student copy leaves it out.
"""
import html
import json
import keyword
import pathlib
import re
import shutil
import types

import pytest

from tinyunits.course import BY_NAME
from tinyunits.course.source import (all_derivations, all_regions, derivations_in,
                                     project_files, regions_in, strip, teacher_only)
from test_course import student  # noqa: F401  (the fixture: a fresh student copy)

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME = re.compile(r"[A-Za-z_]\w*")
TAG = re.compile(r"<[^>]*>")

pytestmark = pytest.mark.backend_free("the backend changes no file")


def normal(line: str) -> str:
    return " ".join(line.split())


def code(line: str) -> str:
    return normal(re.sub(r"\s+#.*$|^\s*#.*$", "", line))


def spans(root):
    """{path: (code lines, derivation lines)} of the marked lines of every library file."""
    marked = {}
    for r in all_regions(root):
        marked.setdefault(r.path, ([], []))[0].extend(r.lines)
    for d in all_derivations(root):
        marked.setdefault(d.path, ([], []))[1].extend(d.lines)
    return marked


def shipped_anyway(root) -> set:
    """The lines of the library the student copy ships, outside every region and
    derivation, made normal (a drop-in of an exercise is not shipped: its lines count)."""
    lines = set()
    for rel in project_files(root):
        if not (rel.startswith("tinyunits/") and rel.endswith(".py")):
            continue
        text = (root / rel).read_text()
        inside = {k for r in regions_in(text) + derivations_in(text)
                  for k in range(r.begin, r.end + 1)}
        lines.update(code(line) for k, line in enumerate(text.splitlines()) if k not in inside)
    return lines


def solution_lines(root=ROOT):
    """(counted, not counted): the solution lines by the rule above, and the lines it lets go."""
    found = [code(line) for c, _ in spans(root).values() for line in c]
    # a lesson's derivation is comment lines: the site shows them without their "# "
    found += [normal(re.sub(r"^\s*#\s?", "", line)) for _, d in spans(root).values() for line in d]
    anyway = shipped_anyway(root)
    counted, let_go = [], set()
    for line in dict.fromkeys(filter(None, found)):
        names = [n for n in NAME.findall(line) if not keyword.iskeyword(n)]
        (let_go.add(line) if len(names) < 2 or line in anyway else counted.append(line))
    return counted, let_go


def readings(path: pathlib.Path) -> list:
    """A text file as it is, its JSON strings decoded, and each of those as text with
    HTML tags dropped and entities unescaped; whitespace made one space. [] if binary."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    found = [text]
    if path.suffix in (".json", ".ipynb"):
        strings = []

        def collect(node):
            if isinstance(node, str):
                strings.append(node)
            for child in (node.values() if isinstance(node, dict) else
                          node if isinstance(node, list) else ()):
                collect(child)
        try:
            collect(json.loads(text))
            found.append("\n".join(strings))
        except ValueError:
            pass
    found += [html.unescape(TAG.sub("", t)) for t in found]
    return [normal(t) for t in found]


def leaks(tree, lines) -> dict:
    """{solution line: [files of tree that hold it]}, for the lines found anywhere."""
    tree = pathlib.Path(tree)
    texts = {p.relative_to(tree).as_posix(): readings(p) for p in sorted(tree.rglob("*"))
             if p.is_file()}
    found = {}
    for line in lines:
        where = [rel for rel, versions in texts.items() if any(line in t for t in versions)]
        if where:
            found[line] = where
    return found


def report(found) -> str:
    return "\n".join(f"{line!r}\n    in {', '.join(where[:5])}" for line, where in found.items())


@pytest.fixture(scope="module")
def lines():
    counted, _ = solution_lines()
    return counted


@pytest.fixture(scope="module")
def site():
    """The site tests/test_site.py builds (tiny mode, as `make site` builds it), built once."""
    test_site = pytest.importorskip("test_site", reason="the site needs the `site` extra")
    return test_site.built_site()


# --------------------------------------------------------------------------- the rule
def test_the_rule_counts_the_solutions_and_lets_go_only_syntax_and_shipped_code():
    counted, let_go = solution_lines()
    regions, derivations = all_regions(ROOT), all_derivations(ROOT)
    assert len(regions) == len(BY_NAME) and derivations
    assert len(counted) >= 50, counted
    # a newly let-go line: check that it gives nothing away, then add it here
    assert let_go == {"xp = get_array_module(g)", "if l > 0:"}, let_go
    for r in regions:  # every exercise keeps lines that count
        assert any(code(line) in counted for line in r.lines), r.name


# --------------------------------------------------------------------------- the student copy
def test_the_student_copy_holds_no_solution_line(student, lines):
    found = leaks(student, lines)
    assert not found, f"{len(found)} solution lines in the student copy:\n" + report(found)


def test_the_student_copy_leaves_the_teachers_files_out(student):
    listed = project_files(ROOT)
    assert not any(teacher_only(rel) for rel in listed)
    for rel in ("tests/test_course.py", "tests/test_course_leaks.py", "docs/teaching.md"):
        assert (ROOT / rel).is_file() and teacher_only(rel) and not (student / rel).exists()
    for rel in ("tinyunits/fast/dac.py", "tinyunits/fast/dac_cuda.py", "tinyunits/fast/dac_cuda.cu"):
        assert (ROOT / rel).is_file() and rel not in listed and not (student / rel).exists()
    assert (student / "tinyunits" / "fast" / "__init__.py").is_file()  # the other drop-ins stay


def test_derivations_become_a_note_naming_the_exercises(student):
    for d in all_derivations(ROOT):
        text = (student / d.path).read_text()
        assert "DERIVATION" not in text, d.path
        names = d.name.split()
        note = f"(exercise {', '.join(names)}: yours to work out; see "
        assert note in text, (d.path, note)
        assert all(BY_NAME[n].lesson in text for n in names)


def test_derivation_markers_are_checked():
    with pytest.raises(ValueError, match="never ends"):
        derivations_in("    BEGIN DERIVATION hannet_dx\n    dL/dx = H g_z\n")
    with pytest.raises(ValueError, match="unknown exercise"):
        derivations_in("    BEGIN DERIVATION hannet_dz\n    END DERIVATION hannet_dz\n")
    text = '"""Head.\n\n    y = f(x)\n    BEGIN DERIVATION hannet_dx\n    dy = g\n' \
           '    END DERIVATION hannet_dx\n"""\n'
    assert strip(text) == ('"""Head.\n\n    y = f(x)\n    (exercise hannet_dx: yours to work out; '
                           'see docs/papers/hannet.md, lessons/04_hannet.py)\n"""\n')
    # In a lesson's prose the markers are comment lines, and so is the note.
    prose = "# dL/dx is then\n# BEGIN DERIVATION hannet_dx\n# dL/dx = H g_z\n# END DERIVATION hannet_dx\n"
    assert strip(prose) == ("# dL/dx is then\n# (exercise hannet_dx: yours to work out; "
                            "see docs/papers/hannet.md, lessons/04_hannet.py)\n")


# --------------------------------------------------------------------------- the site
def test_the_site_holds_no_solution_line(site, lines):
    found = leaks(site, lines)
    assert not found, f"{len(found)} solution lines on the site:\n" + report(found)
    api = html.unescape(TAG.sub("", (site / "api" / "units" / "index.html").read_text()))
    assert "raise NotImplementedError('hannet_du: not implemented yet" in api  # the stub is shown


def plant(site, student, tree, line_of):
    """Copies of four files of the student copy and the site, each with a leak planted."""
    import pygments
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    targets = {"lessons/00_engine.py": student, "api/units/index.html": site,
               "search/search_index.json": site, "lessons/00_engine/00_engine.ipynb": site}
    for rel, origin in targets.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(origin / rel, tree / rel)
    with open(tree / "lessons/00_engine.py", "a") as lesson:  # as written, re-indented
        lesson.write(f"\n        {line_of['hannet_du']}\n")
    page = (tree / "api/units/index.html").read_text()  # highlighted, with entities
    code_html = pygments.highlight(line_of["dac_dx"], PythonLexer(), HtmlFormatter())
    (tree / "api/units/index.html").write_text(page.replace("</article>", code_html + "</article>", 1))
    index = json.loads((tree / "search/search_index.json").read_text())  # indexed
    index["docs"].append({"location": "planted/", "title": "planted",
                          "text": html.escape(line_of["focusing_dmu"])})
    (tree / "search/search_index.json").write_text(json.dumps(index))
    notebook = json.loads((tree / "lessons/00_engine/00_engine.ipynb").read_text())
    notebook["cells"][-1]["outputs"] = [{"output_type": "stream", "name": "stdout",
                                          "text": [line_of["derivation"] + "\n"]}]
    (tree / "lessons/00_engine/00_engine.ipynb").write_text(json.dumps(notebook))


def test_a_planted_leak_is_caught_in_every_form(site, student, lines, tmp_path):
    regions = {r.name: r for r in all_regions(ROOT)}
    line_of = {name: next(code(l) for l in regions[name].lines if code(l) in lines)
               for name in ("hannet_du", "dac_dx", "focusing_dmu")}
    line_of["derivation"] = next(normal(l) for d in all_derivations(ROOT) for l in d.lines
                                 if normal(l) in lines)
    assert '"' in line_of["dac_dx"] and ">" in line_of["dac_dx"]  # entities in the HTML
    plant(site, student, tmp_path, line_of)
    found = leaks(tmp_path, lines)
    assert found == {line_of["hannet_du"]: ["lessons/00_engine.py"],
                     line_of["dac_dx"]: ["api/units/index.html"],
                     line_of["focusing_dmu"]: ["search/search_index.json"],
                     line_of["derivation"]: ["lessons/00_engine/00_engine.ipynb"]}, report(found)


# --------------------------------------------------------------------------- SITE_SOLUTIONS
@pytest.fixture
def hooks():
    pytest.importorskip("mkdocs", reason="the site needs the `site` extra")
    import sys
    sys.path.insert(0, str(ROOT / "tools"))
    import site_hooks
    return site_hooks


def mkdocs_config():
    plugin = types.SimpleNamespace(config=types.SimpleNamespace(handlers={"python": {"paths": ["."]}}))
    return types.SimpleNamespace(plugins={"mkdocstrings": plugin})


def test_the_api_pages_read_student_sources_unless_the_teacher_asks(hooks, monkeypatch):
    monkeypatch.delenv("SITE_SOLUTIONS", raising=False)
    config = hooks.on_config(mkdocs_config())
    [paths] = config.plugins["mkdocstrings"].config.handlers["python"]["paths"]
    sources = pathlib.Path(paths)
    assert sources != ROOT and (sources / "tinyunits" / "units" / "dac.py").is_file()
    dac = (sources / "tinyunits" / "units" / "dac.py").read_text()
    assert dac == strip((ROOT / "tinyunits" / "units" / "dac.py").read_text())
    assert "raise NotImplementedError('dac_dB" in dac
    monkeypatch.setenv("SITE_SOLUTIONS", "1")
    config = hooks.on_config(mkdocs_config())
    assert config.plugins["mkdocstrings"].config.handlers["python"]["paths"] == ["."]


# --------------------------------------------------------------------------- other forms
SIGNATURES = {  # exercise -> its result as our code, docs, lessons and hints write it
    "engine_mul": ("g * self.b", "g * self.a", "dL/db = g a", "the other one times",
                   "g times the other input"),
    "engine_div": ("-gb * self.a / self.b", "g / self.b", "-a / b^2", "-g a / b^2"),
    "engine_sigmoid": ("self.y * (1 - self.y)", "y (1 - y)", "(1 - y) y",
                       "sigmoid(x) (1 - sigmoid(x))"),
    "engine_sum_to": ("g.ndim - len(shape)", "tuple(range(lead))"),
    "engine_matmul": ("g @ _swap(self.b)", "_swap(self.a) @ g", "g B^T", "A^T g"),
    "engine_softmax_ce": ("softmax(z) - onehot", "softmax(z) - one_hot",
                          "dz[xp.arange(n), self.labels] -= 1"),
    "dac_dW": ("sum_b A[b,i,j] * g[b,i]", r"\varphi(b_{ij} + z_{sj})\, g_{si}",
               "phi(B[i,j] + x[b,j]) g[b,i]", 'einsum("bij,bi->ij", A, g)'),
    "dac_dB": ("W[i,j] * sum_b M[b,i,j]", r"w_{ij} \sum_{s=1}^{N} \varphi'(b_{ij} + z_{sj})",
               "W * M.sum(axis=0)"),
    "dac_dx": ("sum_i W[i,j] * M[b,i,j]", r"\sum_{i=1}^{n} w_{ij}\, \varphi'(b_{ij} + z_{sj})",
               'einsum("ij,bij->bj", W, M)'),
    "dac_conv": ("dA[b,i,j, h*s+p, w*s+q] += W[i,j,p,q] * g[b,i,h,w]",
                 "sum_t W[i,j,t] G[b,i,t]", "sum_b A[b,i,j] . G[b,i,t]", "= sum_i M[b,i,j]",
                 "= sum_{b,h,w} M[b,i,j]", r"\sum_{s, h, k} g_{si}(h, k)\; a_{sij}",
                 r"\varphi'(b_{ij} + z_{sj}(u, v))\, \frac{\partial E}{\partial a_{sij}(u, v)}"),
    "two_argument_inner": ("D_{l-1} = (D_l W_l) * [H_l > 0]", "dW_l = D_l^T H_l",
                           "dX = D_0 W_0", "D.T @ H", "(D @ self.weights[l]) * (self.H[l] > 0)"),
    "tmaf_levels": ("_accumulate(self.index, g * self.x,", "g_i * x_i",
                    "[bin(x_i^(m)) = k] g_i^(m) x_i^(m)"),
    "tmaf_tridiagonal": ("g * self.x_prev", "g * self.x_next", "g_i * x_{i-1}", "g_i * x_{i+1}",
                         "[bin(x_i^(m)) = k] g_i^(m) x_{i-1}^(m)",
                         "[bin(x_i^(m)) = k] g_i^(m) x_{i+1}^(m)"),
    "hannet_dx": ("H g_z", "H^T g_z", "g_z - 2 t u_hat", "g_z - (2 * t)[:, None] * u_hat",
                  "g_z^(m) - 2 (g_z^(m) . u_hat) u_hat"),
    "hannet_du": ("-2 sum (t x + s g_z)", "t^(m) x^(m) + s^(m) g_z^(m)",
                  "-2 * (t @ x + s @ g_z)", "u_hat . dL/du_hat", "(I - u_hat u_hat^T) / ||u||"),
    "focusing_dmu": ("sum_i q d - Q sum_i w d", "Q * rowdot(u, ud) / m", "Q sum_i a_i d_i",
                     "q_ji - a_ji Q_j", "u_ji (c_ji - sum_k a_jk c_jk)",
                     "-(s_j^3 / m) sum_k phi_jk dphi_jk/dtheta"),
    "focusing_dsigma": ("sum_i q d^2 - Q sum_i w d^2", "Q * rowdot(ud, ud) / m",
                        "(q_ji - a_ji Q_j) d_ji^2", "q_ji - a_ji Q_j",
                        "-(s_j^3 / m) sum_k phi_jk dphi_jk/dtheta"),
}
# TeX's spacing and products, and \left( \right): nothing a formula reads
TEX_SPACING = re.compile(r"\\(?:[,;:! ]|quad|qquad|left|right|cdot|odot|times)(?![A-Za-z])")


def formula(text: str) -> str:
    """text as a signature is compared: `**` and `\\top` as `^` and `T`, the minus sign
    as `-`, no product sign (`*`, `@`, TeX's, Unicode's), no brace, `$`, backslash or
    comment mark, and no space but one between two names (`H g_z`) that would
    otherwise run together."""
    text = text.replace("**", "^").replace("\\top", "T").replace("⊤", "T").replace("·", ".")
    text = text.replace("−", "-").replace("∗", "*").replace("×", "*").replace("⋅", "*")
    text = re.sub(r"[*@$#\\]", " ", TEX_SPACING.sub(" ", text)).replace("{", "").replace("}", "")
    return re.sub(r"\s+", "", re.sub(r"(?<=\w)\s+(?=\w)", "\0", text)).replace("\0", " ")


def signature(form: str) -> re.Pattern:
    """form, normalised, as a pattern that a longer name around it does not match."""
    text = formula(form)
    head = r"(?<!\w)" if re.match(r"\w", text) else ""
    tail = r"(?!\w)" if re.search(r"\w$", text) else ""
    return re.compile(head + re.escape(text) + tail)


def formula_leaks(tree) -> dict:
    """{(exercise, signature): [files of tree that hold it]}, read as `leaks` reads them."""
    tree = pathlib.Path(tree)
    patterns = {(name, form): signature(form) for name, forms in SIGNATURES.items()
                for form in forms}
    found = {}
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        texts = [formula(t) for t in readings(path)]
        for key, pattern in patterns.items():
            if any(pattern.search(t) for t in texts):
                found.setdefault(key, []).append(path.relative_to(tree).as_posix())
    return found


def formula_report(found) -> str:
    return "\n".join(f"{name}: {form!r}\n    in {', '.join(where[:5])}"
                     for (name, form), where in found.items())


def test_every_exercise_has_a_signature_its_own_solution_or_derivation_writes():
    assert set(SIGNATURES) == set(BY_NAME)
    marked = {name: [] for name in BY_NAME}
    for r in all_regions(ROOT):
        marked[r.name] += r.lines
    for d in all_derivations(ROOT):
        for name in d.name.split():
            marked[name] += d.lines
    for name, forms in SIGNATURES.items():
        text = formula("\n".join(marked[name]))
        assert any(signature(form).search(text) for form in forms), (name, forms)


def test_the_normal_form_reads_code_maths_and_prose_alike():
    same = ["H g_z", "H @ g_z", "H*g_z", r"$H\, g_{z}$", "#  H\n#  g_z", r"H \cdot g_{z}"]
    assert {formula(form) for form in same} == {"H g_z"}
    assert formula("y * (1 - y)") == formula("y (1 - y)") == "y(1-y)"
    assert formula("x ** 2 / b^{2}") == "x^2/b^2" and formula(r"A^{\top} g") == "A^T g"
    assert not signature("g * self.a").search(formula("padding\nself.activation"))
    assert not signature("H g_z").search(formula("DH g_zz"))


def test_the_student_copy_and_site_state_no_result_in_another_form(student, site):
    copy, on_site = formula_leaks(student), formula_leaks(site)
    assert not copy and not on_site, (
        f"results an exercise asks for, in the student copy:\n{formula_report(copy)}\n"
        f"and on the student site:\n{formula_report(on_site)}")


def test_a_result_put_back_in_another_form_is_caught(site, student, tmp_path):
    """Planted: hannet_dx's result typeset in a copy of docs/papers/hannet.md (as TeX);
    the sigmoid's in words and entities in a copy of the site's page of it (HTML);
    softmax cross-entropy's in the search index (JSON, escaped); and every signature,
    as written, in a copy of docs/papers/focusing.md. Each is reported where planted."""
    paper, page = "docs/papers/hannet.md", "papers/focusing/index.html"
    index, every = "search/search_index.json", "docs/papers/focusing.md"
    for rel, origin in ((paper, student), (page, site), (index, site), (every, student)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(origin / rel, tmp_path / rel)
    with open(tmp_path / paper, "a") as f:
        f.write("\n$$\\frac{\\partial\\mathcal{L}}{\\partial x} = H\\, g_{z}$$\n")
    html_page = (tmp_path / page).read_text()
    planted = "<p>The sigmoid&#39;s gradient is <em>g</em> y &lowast; (1 &minus; y)</p>"
    (tmp_path / page).write_text(html_page.replace("</article>", planted + "</article>", 1))
    search = json.loads((tmp_path / index).read_text())  # the papers' entries, and one more
    search["docs"] = [doc for doc in search["docs"] if doc["location"].startswith("papers/")]
    search["docs"].append({"location": "planted/", "title": "planted",
                           "text": html.escape("dL/dz = (softmax(z) - one_hot(y)) / N")})
    (tmp_path / index).write_text(json.dumps(search))
    with open(tmp_path / every, "a") as f:
        f.write("".join(f"\n{form}\n" for forms in SIGNATURES.values() for form in forms))
    expected = {(name, form): [every] for name, forms in SIGNATURES.items() for form in forms}
    expected[("hannet_dx", "H g_z")] = [every, paper]
    expected[("engine_sigmoid", "y (1 - y)")] = [every, page]
    expected[("engine_softmax_ce", "softmax(z) - one_hot")] = [every, index]
    found = formula_leaks(tmp_path)
    wrong = {key: where for key, where in found.items() if where != expected.get(key)}
    assert found == expected, formula_report(wrong) or f"not found: {set(expected) - set(found)}"
