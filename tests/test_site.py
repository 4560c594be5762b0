"""The course site: lessons executed and cached, nothing loaded from the network, and
what a person sees in headless Chromium (typeset maths, loaded figures, the six lessons).

The site is built once per `make test`: on the NumPy run (the strict run skips, the
lessons' own strict run is tests/test_lessons.py), in tiny mode, into build/test-site,
with the lesson cache of `make site` (build/site-cache). The screenshot of the DAC
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


@functools.cache
def built_site():
    """The site in tiny mode, built by mkdocs exactly as `make site` builds it (students'
    pages, no solutions), once per session: tests/test_course_leaks.py reads it too."""
    for module in ("mkdocs", "material", "mkdocs_jupyter", "mkdocstrings"):
        pytest.importorskip(module, reason="the site needs the `site` extra: pip install -e '.[site]'")
    if shutil.which("npm") is None and not list((ROOT / "build" / "site-cache").glob("katex-*")):
        pytest.skip("the maths renderer comes from `npm pack katex`; npm is not installed")
    env = dict(os.environ, SITE_MODE="tiny", NO_MKDOCS_2_WARNING="1")
    env.pop("SITE_SOLUTIONS", None)
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(SITE)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-5000:]
    return SITE


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
        if page.name == "404.html":  # its links are absolute, for whatever URL was missed
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
        assert (site / "lessons" / name / f"{name}.ipynb").exists(), f"{name}: no notebook to download"


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
    import jupytext
    notebook = jupytext.read(ROOT / "lessons" / f"{name}.py", fmt="py:percent")
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
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
