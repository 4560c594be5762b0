"""mkdocs hooks of the course site (named in mkdocs.yml; `make site` runs mkdocs build).

- The lessons: every lessons/NN_name.py executed as a notebook in SITE_MODE (tiny |
  quick | full; default quick) by tools/site_lessons.py, cached, then handed to
  mkdocs-jupyter as lessons/NN_name.ipynb.
- exercises.md, generated from the course's own registry (tinyunits.course.EXERCISES)
  at every build, so the list never goes stale.
- api/graph_example.png, the API page's picture of a graph, drawn at every build by
  running docs/api/graph_example.py, the example the page shows beside it.
- A lesson's links to docs (../docs/papers/dac.md, as the checkout sees them) lead to
  the site's pages instead (papers/dac/).
- KaTeX, pinned, from the npm registry (`npm pack`, once, into the cache), copied into
  site/assets/katex/: pages typeset their maths offline.
- nbconvert's template writes a CDN MathJax <script> into every notebook page; it is
  dropped, since KaTeX typesets those pages too.
- A lesson's page and its notebook to download (linked at the top of the page) are
  the executed notebook as a reader may see it (page_notebook): without the set-up
  cell, and without a path of the build machine (a figure's path as a cell's value,
  the checkout, the cache, the environment in printed text).
- 404.html, which a server returns for a missed URL at any depth: with SITE_URL
  (https://host/course/) its links are absolute under that folder, as mkdocs writes
  them; without, they are relative to the site's root, not to the server's.
- No solution on the pages: the API pages (mkdocstrings, which shows each object's
  source) read the library as a student copy has it (tinyunits.course.source.strip:
  every exercise a stub, every marked derivation a note). SITE_SOLUTIONS=1 builds
  them from the checkout itself, solutions in, for a teacher's site.
- No teacher's page either: TEACHER_PAGES (hidden cases, how a submission could
  cheat) are left out of the site and its navigation, as the student copy leaves
  them out; SITE_SOLUTIONS=1 keeps them.
"""
import logging
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile

import nbformat

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import site_lessons  # noqa: E402  (this folder, put on sys.path above)

KATEX_VERSION = "0.16.22"
KATEX_FILES = ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js")
NBCONVERT_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->",
                               re.DOTALL)
TEACHER_PAGES = ("teaching.md",)  # relative to docs/
log = logging.getLogger("mkdocs.hooks.site")
ROOT = site_lessons.ROOT
_student_sources = None  # the TemporaryDirectory the API pages read, kept for the build


def with_solutions() -> bool:
    """Did the builder ask for a teacher's site (SITE_SOLUTIONS=1)?"""
    return os.environ.get("SITE_SOLUTIONS", "0") not in ("", "0")


def write_student_sources(dest, root=ROOT) -> pathlib.Path:
    """Every .py file of the library, as the student copy has it, under dest/tinyunits."""
    from tinyunits.course.source import strip
    root, dest = pathlib.Path(root), pathlib.Path(dest)
    for path in sorted((root / "tinyunits").rglob("*.py")):
        rel = path.relative_to(root)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(strip(path.read_text(), rel.as_posix()))
    return dest


@event_priority(100)  # before mkdocstrings' on_config, which makes the handler
def on_config(config):
    global _student_sources
    if with_solutions():
        log.warning("site: SITE_SOLUTIONS=1: the API pages show every solution; "
                    "not a site for students")
        return config
    _student_sources = tempfile.TemporaryDirectory(prefix="tinyunits-student-sources-")
    python = config.plugins["mkdocstrings"].config.handlers.setdefault("python", {})
    python["paths"] = [str(write_student_sources(_student_sources.name))]
    return config


def without_teacher_pages(nav):
    """mkdocs.yml's nav (lists of {title: page or section} and bare pages) without
    TEACHER_PAGES."""
    if isinstance(nav, list):
        return [without_teacher_pages(item) for item in nav
                if not (item in TEACHER_PAGES or isinstance(item, dict)
                        and any(v in TEACHER_PAGES for v in item.values()))]
    if isinstance(nav, dict):
        return {title: without_teacher_pages(value) for title, value in nav.items()}
    return nav


def katex(cache=site_lessons.CACHE) -> pathlib.Path:
    """KaTeX's dist/ folder, fetched once with npm and kept in the cache."""
    dist = pathlib.Path(cache) / f"katex-{KATEX_VERSION}"
    if (dist / KATEX_FILES[0]).exists():
        return dist
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(["npm", "pack", f"katex@{KATEX_VERSION}", "--silent"], cwd=tmp,
                           check=True, capture_output=True, text=True)
        except (OSError, subprocess.CalledProcessError) as error:
            raise RuntimeError(f"site: the maths renderer comes from `npm pack katex@{KATEX_VERSION}`"
                               f" (Node.js's npm); it failed: {error}") from None
        with tarfile.open(pathlib.Path(tmp) / f"katex-{KATEX_VERSION}.tgz") as archive:
            # the "data" filter refuses paths outside tmp (Python >= 3.10.12, 3.11.4)
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            archive.extractall(tmp, **safe)
        (pathlib.Path(tmp) / "package" / "dist").rename(dist.with_suffix(".partial"))
        os.replace(dist.with_suffix(".partial"), dist)
    return dist


def exercises_page() -> str:
    """The exercises page in Markdown, from the registry the grader itself uses."""
    head = ("# Exercises\n\nEach exercise is one hand-written backward (or one gradient in "
            "one) that the student copy leaves as a stub. Make the copy with "
            "`python -m tinyunits.course student DIR`, grade it with "
            "`python -m tinyunits.course grade DIR`; [doing the exercises](course.md) says "
            "more.\n\n")
    try:
        from tinyunits.course import EXERCISES
    except ImportError as error:
        return head + (f"!!! warning \"No exercise registry\"\n    This checkout has no "
                       f"`tinyunits.course.EXERCISES` ({error}), so there is no list to show.\n")
    items = EXERCISES.values() if hasattr(EXERCISES, "values") else EXERCISES
    rows = ["| exercise | points | equation | lesson | hint |", "| --- | ---: | --- | --- | --- |"]
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731  (one table row)
    rows += [f"| `{e.name}` | {e.points} | {cell(e.equation)} | `{e.lesson}` | {cell(e.hint)} |"
             for e in items]
    total = sum(e.points for e in items)
    return head + "\n".join(rows) + f"\n\n{len(rows) - 2} exercises, {total} points in all.\n"


def graph_example(docs) -> bytes:
    """The PNG that docs/api/graph_example.py draws, run as a reader runs it (in a
    folder of its own, with this checkout's tinyunits)."""
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(site_lessons.ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([sys.executable, str(pathlib.Path(docs) / "api" / "graph_example.py")],
                             cwd=tmp, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"site: docs/api/graph_example.py failed:\n{run.stderr[-3000:]}")
        return (pathlib.Path(tmp) / "graph.png").read_bytes()


# A cell's value that is a path (a figure's file, as figure() returns it), as Jupyter
# shows it: the figure itself is on the page already.
PATH_VALUE = re.compile(r"^(?:\w*Path\()?'(/[^'\n]*)'\)?$")


def build_paths(figures) -> list:
    """(absolute path of the build machine, what a page says instead), longest first,
    so the most precise one wins: the lesson's figures folder in the cache (figures/NN_name,
    as a reader's run names it), the Python environment (<python>), the checkout (paths
    become relative to it), the temporary folder (<tmp>), the home folder (<home>)."""
    places = [(str(figures), f"figures/{pathlib.Path(figures).name}"), (str(ROOT) + os.sep, "")]
    places += [(str(p), f"<{name}>") for name, p in (
        ("python", sys.prefix), ("python", sys.base_prefix), ("tmp", tempfile.gettempdir()),
        ("home", pathlib.Path.home())) if len(str(p)) > 1]
    return sorted(places, key=lambda place: -len(place[0]))


def page_notebook(executed, dest) -> pathlib.Path:
    """The executed notebook as the site shows it and offers it to download, at dest:
    no set-up cell (it picks the mode and the cache's figures folder), no cell value
    that is a path, and every other absolute path of the build machine rewritten
    (build_paths) in every text output."""
    executed, dest = pathlib.Path(executed), pathlib.Path(dest)
    notebook = nbformat.read(executed, as_version=4)
    notebook.cells = [c for c in notebook.cells
                      if site_lessons.SETUP_TAG not in c.get("metadata", {}).get("tags", [])]
    places = build_paths(executed.parent / "figures" / executed.stem)

    def local(text):
        for path, instead in places:
            text = text.replace(path, instead)
        return text

    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = [o for o in cell.outputs if not (
            o.output_type == "execute_result" and set(o.data) == {"text/plain"}
            and PATH_VALUE.match(o.data["text/plain"]))]
        for output in cell.outputs:
            if "text" in output:
                output.text = local(output.text)
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/") or mime.endswith(("json", "javascript")):
                    output.data[mime] = local(value) if isinstance(value, str) else value
            if "traceback" in output:
                output.traceback = [local(line) for line in output.traceback]
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, dest)
    return dest


@event_priority(100)  # before mkdocs-jupyter's on_files, which claims the notebooks
def on_files(files, config):
    if not with_solutions():  # (a student copy has none to remove)
        for page in filter(None, map(files.get_file_from_path, TEACHER_PAGES)):
            files.remove(page)
        config.nav = without_teacher_pages(config.nav)  # mkdocs reads it after on_files
    mode = os.environ.get("SITE_MODE", "quick")
    pages = site_lessons.CACHE / mode / "pages"
    for executed in site_lessons.execute_all(mode, log=log.info):
        notebook = page_notebook(executed, pages / "lessons" / executed.name)
        # A File read from a folder, not File.generated: mkdocs-jupyter's wrapper
        # finds the source through src_dir, and copies it beside the page to download.
        files.append(File(f"lessons/{notebook.name}", src_dir=str(pages),
                          dest_dir=config.site_dir, use_directory_urls=config.use_directory_urls))
    files.append(File.generated(config, "exercises.md", content=exercises_page()))
    files.append(File.generated(config, "api/graph_example.png",
                                content=graph_example(pathlib.Path(config.docs_dir))))
    dist = katex()
    for path in sorted(p for p in dist.rglob("*") if p.is_file() and (
            p.parent.name == "fonts" or str(p.relative_to(dist)) in KATEX_FILES)):
        files.append(File.generated(config, f"assets/katex/{path.relative_to(dist).as_posix()}",
                                    abs_src_path=str(path)))
    return files


def on_post_page(output, page, config):
    output = NBCONVERT_MATHJAX.sub("", output)
    if page.file.src_uri.startswith("lessons/"):
        output = LESSON_DOCS_LINK.sub(lambda m: docs_link(m, page, config), output)
        output = download_link(output, pathlib.PurePosixPath(page.file.src_uri).name)
    return output


ARTICLE = '<article class="md-content__inner md-typeset">'


def download_link(output, notebook):
    """The page with a link to its notebook (mkdocs-jupyter copies it beside the page)
    at the top of the article."""
    if output.count(ARTICLE) != 1:
        raise RuntimeError(f"site: no single {ARTICLE} on the page of {notebook} to put its "
                           "download link in (has the theme changed?)")
    link = (f'<p class="lesson-download"><a href="{notebook}" download>Download this lesson '
            f'as a notebook ({notebook})</a>, with the outputs shown here.</p>')
    return output.replace(ARTICLE, ARTICLE + link)


# The links of a page served at the site's root path: "/assets/...", "/.", and the
# theme's base for its scripts. Not "//host/...", a URL of another site.
ROOT_LINK = re.compile(r'((?:href|src)=")/(?!/)|("base":\s*")/(?=")')


def on_post_template(output, template_name, config):
    """404.html with links relative to the site's root (where it lies) unless mkdocs
    knows the URL the site is served at (SITE_URL) and wrote them under it."""
    if template_name != "404.html" or config.site_url:
        return output
    return ROOT_LINK.sub(lambda m: (m[1] or m[2]) + ("" if m[1] else "."), output)


# A lesson links docs as a file of the checkout sees them (../docs/papers/dac.md); on
# the site the lesson is lessons/NN_name/ and that page is papers/dac/.
LESSON_DOCS_LINK = re.compile(r'href="\.\./docs/([^"#]+)\.md(#[^"]*)?"')


def docs_link(match, page, config):
    from mkdocs.utils import get_relative_url
    target = File(match[1] + ".md", config.docs_dir, config.site_dir, config.use_directory_urls)
    if not os.path.exists(target.abs_src_path):
        log.warning(f"site: {page.file.src_uri} links {match[0]}, which docs/ does not have")
        return match[0]
    return f'href="{get_relative_url(target.url, page.url)}{match[2] or ""}"'

