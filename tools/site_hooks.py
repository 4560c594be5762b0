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
- No solution on the pages: the API pages (mkdocstrings, which shows each object's
  source) read the library as a student copy has it (tinyunits.course.source.strip:
  every exercise a stub, every marked derivation a note). SITE_SOLUTIONS=1 builds
  them from the checkout itself, solutions in, for a teacher's site.
"""
import logging
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import site_lessons  # noqa: E402  (this folder, put on sys.path above)

KATEX_VERSION = "0.16.22"
KATEX_FILES = ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js")
NBCONVERT_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->",
                               re.DOTALL)
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
            "`python -m tinyunits.course grade DIR`; the teacher's page says more.\n\n")
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


@event_priority(100)  # before mkdocs-jupyter's on_files, which claims the notebooks
def on_files(files, config):
    mode = os.environ.get("SITE_MODE", "quick")
    for notebook in site_lessons.execute_all(mode, log=log.info):
        # A File read from the cache folder, not File.generated: mkdocs-jupyter's
        # wrapper finds the source through src_dir.
        files.append(File(f"lessons/{notebook.name}", src_dir=str(notebook.parent.parent),
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
    return output


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

