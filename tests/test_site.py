"""The course site: lessons executed and cached, nothing loaded from the network, and
what a person sees in headless Chromium (typeset maths, loaded figures, the six lessons).

The site is built once per `make test`: on the NumPy run (the strict run skips, the
lessons' own strict run is tests/test_lessons.py), in tiny mode, into build/test-site,
with the lesson cache of `make site` (build/site-cache); the teacher's site
(SITE_SOLUTIONS=1) once too, into build/test-site-solutions. The screenshot of the DAC
lesson page goes to build/site-screenshots/01_dac.png.
"""
import functools
import html.parser
import http.server
import importlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "test-site"
SCREENSHOT = ROOT / "build" / "site-screenshots" / "01_dac.png"
LESSON_NAMES = sorted(p.stem for p in (ROOT / "lessons").glob("[0-9][0-9]_*.py"))
TEX = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)
RAW_TEX = re.compile(r"\\(sum|frac|phi|sigma|mu|lambda|left|right|exp|mathbb)(?![A-Za-z])|\$\$")

pytestmark = pytest.mark.backend_free("the site is built once per `make test`")
for module in ("jupytext", "nbclient", "ipykernel"):
    pytest.importorskip(module, reason="the site needs the `site` extra: pip install -e '.[site]'")
sys.path.insert(0, str(ROOT / "tools"))
import site_lessons  # noqa: E402


def write_lesson(folder, body, name="00_throwaway.py"):
    path = pathlib.Path(folder) / name
    path.write_text("# %% [markdown]\n# # A throwaway lesson\n\n# %%\n" + body)
    return path


COUNTING_LESSON = """import os, sys
with open("runs.txt", "a") as runs:
    runs.write("run\\n")
print("mode", os.environ["TINYUNITS_LESSON_MODE"], "flags", sys.argv[1:3])
"""


def runs(folder):
    return (pathlib.Path(folder) / "runs.txt").read_text().count("run")


def test_a_lesson_runs_once_per_content_and_mode(tmp_path):
    script, cache = write_lesson(tmp_path, COUNTING_LESSON), tmp_path / "cache"
    [notebook] = site_lessons.execute_all("tiny", [script], cache=cache, log=lambda _: None)
    assert runs(tmp_path) == 1
    import nbformat
    cells = nbformat.read(notebook, as_version=4).cells
    assert cells[0].metadata.tags == [site_lessons.SETUP_TAG]  # left off the page
    printed = "".join(o.get("text", "") for c in cells if c.cell_type == "code" for o in c.outputs)
    assert "mode tiny flags ['--tiny', '--out']" in printed
    site_lessons.execute_all("tiny", [script], cache=cache, log=lambda _: None)
    assert runs(tmp_path) == 1, "an unchanged lesson ran again"
    site_lessons.execute_all("quick", [script], cache=cache, log=lambda _: None)
    assert runs(tmp_path) == 2, "another mode did not run"
    script.write_text(script.read_text() + "print('changed')\n")
    site_lessons.execute_all("tiny", [script], cache=cache, log=lambda _: None)
    assert runs(tmp_path) == 3, "a changed lesson was taken from the cache"
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / "unit.py").write_text("STEPS = 1\n")  # code the lesson imports
    site_lessons.execute_all("tiny", [script], cache=cache, log=lambda _: None)
    assert runs(tmp_path) == 4, "a lesson whose trials module changed was taken from the cache"


def test_a_failing_lesson_stops_the_build_and_caches_nothing(tmp_path):
    script = write_lesson(tmp_path, "raise ValueError('planted')\n", name="07_broken.py")
    with pytest.raises(RuntimeError, match="07_broken.py failed in tiny mode"):
        site_lessons.execute_all("tiny", [script], cache=tmp_path / "cache", log=lambda _: None)
    assert not site_lessons.cached(script, "tiny", tmp_path / "cache").exists()
    with pytest.raises(ValueError, match="SITE_MODE must be one of"):
        site_lessons.execute_all("fast", [script], cache=tmp_path / "cache")


@pytest.fixture
def hooks():
    pytest.importorskip("mkdocs", reason="the site needs the `site` extra")
    return importlib.import_module("site_hooks")


def test_exercises_page_lists_the_registry(hooks, monkeypatch):
    stub = types.ModuleType("tinyunits.course")
    stub.EXERCISES = [types.SimpleNamespace(name="dac_dB", points=3, hint="the factor W[i,j]",
                                            equation="eq. (7)", lesson="lessons/01_dac.py"),
                      types.SimpleNamespace(name="hannet_du", points=4, hint="the normaliser",
                                            equation="eq. (11)", lesson="lessons/04_hannet.py")]
    monkeypatch.setitem(sys.modules, "tinyunits.course", stub)
    page = hooks.exercises_page()
    assert "| `dac_dB` | 3 | eq. (7) | `lessons/01_dac.py` | the factor W[i,j] |" in page
    assert "2 exercises, 7 points in all." in page


def test_exercises_page_says_when_there_is_no_registry(hooks, monkeypatch):
    monkeypatch.setitem(sys.modules, "tinyunits.course", None)  # import fails
    assert "No exercise registry" in hooks.exercises_page()


def test_a_page_notebook_holds_no_setup_cell_and_no_path_of_the_build_machine(hooks, tmp_path):
    import nbformat
    import tempfile
    executed = tmp_path / "cache" / "tiny" / "lessons" / "07_demo.ipynb"
    figures = executed.parent / "figures" / "07_demo"
    v4 = nbformat.v4
    setup = v4.new_code_cell("import os", metadata={"tags": [site_lessons.SETUP_TAG]})
    figure = v4.new_code_cell("figure('a')", outputs=[
        v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="}),
        v4.new_output("execute_result", data={"text/plain": repr(str(figures / "a.png"))},
                      execution_count=1)])
    number = v4.new_code_cell("x", outputs=[
        v4.new_output("execute_result", data={"text/plain": "'a path-free string'"},
                      execution_count=2)])
    printed = v4.new_code_cell("print(...)", outputs=[
        v4.new_output("stream", name="stdout", text=f"figures in {figures}\n"),
        v4.new_output("stream", name="stderr",
                      text=f"{sys.prefix}/lib/x.py:1: Warning\n{tempfile.gettempdir()}/run1\n"
                           f"{ROOT}/lessons/x.py\n"),
        v4.new_output("error", ename="E", evalue="", traceback=[f"File {sys.prefix}/y.py"])])
    executed.parent.mkdir(parents=True)
    nbformat.write(v4.new_notebook(cells=[setup, figure, number, printed]), executed)
    page = hooks.page_notebook(executed, tmp_path / "pages" / "07_demo.ipynb")
    text = page.read_text()
    for place in (str(ROOT), str(figures), tempfile.gettempdir() + "/", sys.prefix + "/"):
        assert place not in text, f"{place} is in the page's notebook"
    cells = nbformat.read(page, as_version=4).cells
    assert [c.source for c in cells] == ["figure('a')", "x", "print(...)"]
    assert [o.output_type for o in cells[0].outputs] == ["display_data"]  # the figure stays
    assert cells[1].outputs[0].data["text/plain"] == "'a path-free string'"
    assert cells[2].outputs[0].text == "figures in figures/07_demo\n"
    assert cells[2].outputs[1].text == "<python>/lib/x.py:1: Warning\n<tmp>/run1\nlessons/x.py\n"


def test_the_students_site_has_no_teachers_page_in_its_navigation(hooks):
    nav = [{"Home": "index.md"}, {"Teaching": [{"The teacher's page": "teaching.md"},
                                              {"Exercises": "exercises.md"}, "teaching.md"]}]
    assert hooks.without_teacher_pages(nav) == [{"Home": "index.md"},
                                                {"Teaching": [{"Exercises": "exercises.md"}]}]


def test_404_links_are_relative_to_the_site_root_unless_mkdocs_knows_its_url(hooks):
    page = ('<link href="/assets/a.css"><a href="/.">home</a><script src="/assets/b.js">'
            '</script><a href="//example.org/x">x</a><script>{"base": "/", "v": "/"}</script>')
    config = types.SimpleNamespace(site_url=None)
    assert hooks.on_post_template(page, "404.html", config) == (
        '<link href="assets/a.css"><a href=".">home</a><script src="assets/b.js">'
        '</script><a href="//example.org/x">x</a><script>{"base": ".", "v": "/"}</script>')
    assert hooks.on_post_template(page, "sitemap.xml", config) == page
    config.site_url = "https://example.org/course/"  # mkdocs wrote the links under it
    assert hooks.on_post_template(page, "404.html", config) == page


@functools.cache
def built_site(solutions=False):
    """The site in tiny mode, built by mkdocs exactly as `make site` builds it (students'
    pages, no solutions; with solutions, as `make site SITE_SOLUTIONS=1` builds the
    teacher's), once per session: tests/test_course_leaks.py reads it too."""
    for module in ("mkdocs", "material", "mkdocs_jupyter", "mkdocstrings"):
        pytest.importorskip(module, reason="the site needs the `site` extra: pip install -e '.[site]'")
    if shutil.which("npm") is None and not list((ROOT / "build" / "site-cache").glob("katex-*")):
        pytest.skip("the maths renderer comes from `npm pack katex`; npm is not installed")
    env = dict(os.environ, SITE_MODE="tiny", NO_MKDOCS_2_WARNING="1")
    env.pop("SITE_URL", None)
    env.pop("SITE_SOLUTIONS", None)
    if solutions:
        env["SITE_SOLUTIONS"] = "1"
    dest = SITE.with_name(SITE.name + "-solutions") if solutions else SITE
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(dest)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-5000:]
    return dest


@pytest.fixture(scope="module")
def site():
    return built_site()


class AssetRefs(html.parser.HTMLParser):
    """Every URL a page loads by itself: scripts, styles, fonts, images, frames, media."""
    LOADS = {"script": "src", "img": "src", "iframe": "src", "embed": "src", "source": "src",
             "video": "src", "audio": "src", "track": "src", "object": "data", "link": "href"}

    def __init__(self):
        super().__init__()
        self.refs, self.in_style = [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "link" and attrs.get("rel") in ("canonical", "alternate", "prev", "next"):
            return  # where the page lives, not something it loads
        if tag in self.LOADS and attrs.get(self.LOADS[tag]):
            self.refs.append(attrs[self.LOADS[tag]])
        self.refs += [u for u in (attrs.get("srcset") or "").split() if "://" in u]
        self.refs += css_urls(attrs.get("style") or "")
        self.in_style = tag == "style"

    def handle_data(self, data):
        if self.in_style:
            self.refs += css_urls(data)


def css_urls(css):
    return re.findall(r"url\(\s*['\"]?([^'\")]+)", css) + re.findall(r"@import\s+['\"]([^'\"]+)", css)


def remote(url):
    return re.match(r"\s*(https?:)?//", url) is not None


def test_built_html_loads_nothing_from_the_network(site):
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 8, f"only {len(pages)} pages built"
    for page in pages:
        parser = AssetRefs()
        parser.feed(page.read_text(encoding="utf-8"))
        assert parser.refs, f"{page}: no assets found, the parser is not reading it"
        assert not [u for u in parser.refs if remote(u)], f"{page.relative_to(site)} loads from the network"
    for sheet in site.rglob("*.css"):
        assert not [u for u in css_urls(sheet.read_text(encoding="utf-8")) if remote(u)], sheet
    assert list(site.glob("assets/katex/fonts/*.woff2")), "KaTeX's fonts are not bundled"


class Links(html.parser.HTMLParser):
    """Every <a href> of a page."""

    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def test_every_link_between_pages_lands_on_a_page(site):
    # a lesson links the docs as the checkout sees them (../docs/papers/dac.md): the site
    # must send the reader to the papers' pages, not to a 404
    broken, internal = [], 0
    for page in site.rglob("*.html"):
        if page.name == "404.html":  # served for a missed URL: test_404_page_under_a_folder
            continue
        parser = Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for href in parser.hrefs:
            url = href.split("#")[0].split("?")[0]
            if not url or re.match(r"[a-z]+:", url):
                continue
            internal += 1
            target = (page.parent / url).resolve()
            if not (target.is_file() or (target / "index.html").is_file()):
                broken.append(f"{page.relative_to(site)} -> {href}")
    assert internal > 100, f"only {internal} links between pages: the parser is not reading them"
    assert not broken, "links to no page:\n" + "\n".join(broken)


def test_lesson_pages_show_the_runs_outputs(site):
    for name in LESSON_NAMES:
        page = (site / "lessons" / name / "index.html").read_text(encoding="utf-8")
        assert "jp-OutputArea-output" in page, f"{name}: no outputs on the page"
        assert "TINYUNITS_LESSON_MODE" not in page, f"{name}: the set-up cell is shown"


def test_each_lesson_page_links_its_notebook_as_the_student_copy_has_it(site):
    import jupytext
    import nbformat
    from tinyunits.course.source import strip
    for name in LESSON_NAMES:
        page = site / "lessons" / name / "index.html"
        parser = Links()
        parser.feed(page.read_text(encoding="utf-8"))
        [href] = [h for h in parser.hrefs if h.endswith(".ipynb")]
        notebook = nbformat.read(page.parent / href, as_version=4)
        script = ROOT / "lessons" / f"{name}.py"
        student = jupytext.reads(strip(script.read_text(), str(script)), fmt="py:percent")
        assert [c.source for c in notebook.cells] == [c.source for c in student.cells], name
        assert any(c.get("outputs") for c in notebook.cells), f"{name}: a notebook without outputs"


def build_machine_paths():
    import tempfile
    return {str(ROOT), tempfile.gettempdir() + "/", sys.prefix + "/", sys.base_prefix + "/",
            str(pathlib.Path.home()) + "/"} - {"/"}


def test_no_page_holds_a_path_of_the_build_machine(site):
    # e.g. a cell whose value is a figure's path, a lesson's "figures in ...", a
    # warning naming a file of the environment, a docstring's source file
    places, found, read = build_machine_paths(), [], 0
    for path in site.rglob("*"):
        if path.suffix in (".html", ".ipynb", ".json", ".js", ".css", ".xml", ".txt"):
            text, read = path.read_text(encoding="utf-8"), read + 1
            found += [f"{path.relative_to(site)}: {p}" for p in places if p in text]
    assert read > 20, f"only {read} text files read"
    assert not found, "paths of the build machine:\n" + "\n".join(found)


def test_404_page_under_a_folder(site):
    # served at https://host/course/ for a URL that is not there: every link and every
    # asset of the page must land on a file of the site
    from urllib.parse import urljoin, urlparse
    page = (site / "404.html").read_text(encoding="utf-8")
    links, assets = Links(), AssetRefs()
    links.feed(page)
    assets.feed(page)
    assert len(links.hrefs) > 10 and len(assets.refs) > 3, "the parser is not reading the page"
    broken = []
    for ref in links.hrefs + assets.refs:
        url = urlparse(urljoin("https://host/course/nowhere", ref))
        if url.netloc != "host":
            continue
        rel = url.path.removeprefix("/course/")
        target = site / rel
        if url.path == rel or not (target.is_file() or (target / "index.html").is_file()):
            broken.append(ref)
    assert not broken, "404.html's links that miss under /course/: " + ", ".join(broken)


def test_the_students_site_leaves_the_teachers_page_out(site):
    assert not (site / "teaching").exists()
    assert (site / "course" / "index.html").exists(), "the students' page is missing"
    index = (site / "search" / "search_index.json").read_text(encoding="utf-8")
    assert '"location":"teaching/' not in index.replace(" ", "")
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="course/"' in home and 'href="teaching/"' not in home


def test_the_teachers_site_keeps_the_teachers_page():
    site = built_site(solutions=True)
    assert (site / "teaching" / "index.html").exists()
    assert 'href="teaching/"' in (site / "index.html").read_text(encoding="utf-8")


def test_printed_tables_keep_their_words_whole(site):
    css = (site / "assets" / "outputs.css").read_text(encoding="utf-8")
    rule = re.search(r"\.jp-OutputArea-output pre\s*\{([^}]*)\}", css)
    assert rule and "white-space: pre;" in rule[1] and "word-break: normal;" in rule[1]
    assert "overflow-x: auto;" in rule[1]
    page = (site / "lessons" / "01_dac" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../assets/outputs.css"' in page


def test_lesson0_and_the_api_page_show_the_graph_pictures(site):
    import nbformat
    name = "00_engine"
    notebook = nbformat.read(site / "lessons" / name / f"{name}.ipynb", as_version=4)
    drawn = [c for c in notebook.cells if c.cell_type == "code" and "plot.graph(" in c.source]
    assert len(drawn) == 3, "lesson 0 draws its graph before and after backward, and marked"
    for cell in drawn:
        assert any("image/png" in o.get("data", {}) for o in cell.outputs), cell.source[-200:]
    page = (site / "lessons" / name / "index.html").read_text(encoding="utf-8")
    assert page.count('src="data:image/png;base64,') >= 5, "3 graphs and 2 spiral figures"
    api = (site / "api" / "training" / "index.html").read_text(encoding="utf-8")
    assert '<img alt="The graph of L' in api and 'src="../graph_example.png"' in api
    assert (site / "api" / "graph_example.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_api_pages_graph_picture_is_drawn_by_its_example(hooks):
    png = hooks.graph_example(ROOT / "docs")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def tex_count(markdown):
    return len(TEX.findall(markdown))


def lesson_markdown(name):
    """A lesson's prose as its page has it: the student copy's (derivations as notes)."""
    import jupytext
    from tinyunits.course.source import strip
    script = ROOT / "lessons" / f"{name}.py"
    notebook = jupytext.reads(strip(script.read_text(), str(script)), fmt="py:percent")
    return "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")


@pytest.fixture(scope="module")
def browser(site):
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1800"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    driver.base = f"http://127.0.0.1:{server.server_address[1]}/"
    yield driver
    driver.quit()
    server.shutdown()


def open_page(driver, path):
    """Load a page, wait until KaTeX has run, and return the console's SEVERE entries."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get(driver.base + path)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && typeof renderMathInElement === 'function'"))
    driver.execute_script("return new Promise(r => requestAnimationFrame(() => setTimeout(r, 200)))")
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


# The page's text as a reader sees it: typeset maths, code and outputs left out.
VISIBLE_PROSE = """const copy = document.querySelector('article').cloneNode(true);
copy.querySelectorAll('.katex, pre, code, script, style').forEach(e => e.remove());
return copy.textContent;"""


def test_home_page_typesets_its_maths(browser):
    assert open_page(browser, "") == []
    expected = tex_count((ROOT / "docs" / "index.md").read_text())
    assert expected >= 5
    assert len(browser.find_elements("css selector", ".katex")) >= expected
    assert browser.find_elements("css selector", ".katex-error") == []
    assert not RAW_TEX.search(browser.execute_script(VISIBLE_PROSE))


@pytest.mark.parametrize("page", ["api/units/", "api/tensor/", "exercises/"])
def test_reference_pages_leave_no_raw_maths(browser, page):
    assert open_page(browser, page) == []
    assert browser.find_elements("css selector", ".katex-error") == []
    assert not RAW_TEX.search(browser.execute_script(VISIBLE_PROSE))


def test_navigation_reaches_all_six_lessons(browser):
    assert open_page(browser, "") == []
    links = {a.get_attribute("href") for a in browser.find_elements("css selector", "nav a.md-nav__link")}
    for name in LESSON_NAMES:
        url = browser.base + f"lessons/{name}/"
        assert url in links, f"the navigation has no link to {name}"
        assert open_page(browser, f"lessons/{name}/") == [], f"console errors on {name}"
        assert browser.current_url == url
        assert browser.find_element("css selector", "article h1").text.startswith("Lesson")
    assert len(LESSON_NAMES) == 6


def test_dac_lesson_page_as_a_reader_sees_it(browser):
    assert open_page(browser, "lessons/01_dac/") == []
    expected = tex_count(lesson_markdown("01_dac"))
    assert len(browser.find_elements("css selector", ".katex")) >= expected
    assert browser.find_elements("css selector", ".katex-error") == []
    prose = browser.execute_script(VISIBLE_PROSE)
    assert "DAC" in prose and not RAW_TEX.search(prose), RAW_TEX.search(prose)
    images = browser.find_elements("css selector", "article img")
    unloaded = [i.get_attribute("src")[:80] for i in images
                if not browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i)]
    assert unloaded == [], f"figures that did not load: {unloaded}"
    outputs = " ".join(e.text for e in browser.find_elements("css selector", ".jp-OutputArea-output"))
    assert "ours" in outputs.lower(), "the closing paper-vs-ours table is not on the page"
    style = browser.execute_script(
        "const s = getComputedStyle(document.querySelector('.jp-OutputArea-output pre'));"
        "return [s.whiteSpace, s.wordBreak, s.overflowX];")
    assert style == ["pre", "normal", "auto"], f"the printed tables wrap: {style}"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
