"""The lessons as executed notebooks for the course site, cached by content and mode.

    python tools/site_lessons.py [--mode tiny|quick|full] [LESSON.py ...]

Each lesson's `# %%` script is read by jupytext and run by nbclient with lessons/ as
its working directory, as `python lessons/NN_name.py` runs it. One set-up cell goes in
front (tagged `site-setup`, left off the page) that picks the mode and sends the
figures to the cache, not to figures/. The executed notebook lands in
build/site-cache/<mode>/lessons/NN_name.ipynb beside NN_name.key, the SHA-256 of the
script, lessons/_lesson.py and the mode: a rebuild whose key matches runs nothing.
Lessons that need running run in parallel, one kernel per core.
"""
import argparse
import hashlib
import os
import pathlib
from concurrent.futures import ThreadPoolExecutor

from tinyunits.fast import available_cores

ROOT = pathlib.Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
CACHE = ROOT / "build" / "site-cache"
MODES = ("tiny", "quick", "full")
SETUP_TAG = "site-setup"

# The mode as a flag (every version of _lesson.setup takes it) and as the notebooks'
# variable (read by anything the lesson starts); figures go beside the notebook. The
# build's kernel has no ipywidgets, which tqdm.auto (imported by the sweep runner, its
# bar off in a kernel) warns about on import: a line about the build, not the lesson.
SETUP_CELL = """import os, sys, warnings
warnings.filterwarnings("ignore", message="IProgress not found")
os.environ["TINYUNITS_LESSON_MODE"] = {mode!r}
sys.argv = [{name!r}, "--{mode}", "--out", {out!r}]"""


def lessons(folder=LESSONS):
    return sorted(pathlib.Path(folder).glob("[0-9][0-9]_*.py"))


def key(script, mode) -> str:
    """What a cached notebook depends on: the script, the code beside it that lessons
    import (_lesson.py, and the runs and figures in trials/ and plots/), the mode."""
    digest = hashlib.sha256(f"{mode}\n{SETUP_CELL}\n".encode())
    folder = pathlib.Path(script).parent
    shared = [folder / "_lesson.py", *sorted(folder.glob("trials/*.py")),
              *sorted(folder.glob("plots/*.py"))]
    for path in (pathlib.Path(script), *shared):
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cached(script, mode, cache=CACHE) -> pathlib.Path:
    return pathlib.Path(cache) / mode / "lessons" / (pathlib.Path(script).stem + ".ipynb")


def is_fresh(script, mode, cache=CACHE) -> bool:
    stamp = cached(script, mode, cache).with_suffix(".key")
    return stamp.exists() and stamp.read_text() == key(script, mode)


def execute(script, mode, cache=CACHE, timeout=None) -> pathlib.Path:
    """Run one lesson as a notebook and write it, with its outputs, into the cache."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from tinyunits.course.source import strip

    script, target = pathlib.Path(script), cached(script, mode, cache)
    figures = target.parent / "figures" / script.stem
    figures.mkdir(parents=True, exist_ok=True)
    # as the student copy has it: a derivation an exercise asks for becomes its note
    text = strip(script.read_text(), str(script))
    notebook = jupytext.reads(text, fmt="py:percent")
    setup = nbformat.v4.new_code_cell(
        SETUP_CELL.format(mode=mode, name=script.name, out=str(figures)),
        metadata={"tags": [SETUP_TAG]})
    notebook.cells.insert(0, setup)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    os.environ.setdefault("MPLBACKEND", "Agg")  # the kernel inherits this process's env
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(script.parent)}})
    try:
        client.execute()
    except CellExecutionError as error:
        raise RuntimeError(f"site: lesson {script.name} failed in {mode} mode:\n{error}") from None
    partial = target.with_suffix(".ipynb.partial")
    nbformat.write(notebook, partial)
    os.replace(partial, target)  # a stopped build never leaves half a notebook
    target.with_suffix(".key").write_text(key(script, mode))
    return target


def execute_all(mode, scripts=None, cache=CACHE, workers=None, log=print) -> list:
    """The executed notebook of every lesson; only stale ones run, in parallel."""
    if mode not in MODES:
        raise ValueError(f"site: SITE_MODE must be one of {MODES}, got {mode!r}")
    scripts = [pathlib.Path(s) for s in (scripts or lessons())]
    stale = [s for s in scripts if not is_fresh(s, mode, cache)]
    for s in scripts:
        log(f"site: lesson {s.name} ({mode}): {'runs' if s in stale else 'cached'}")
    if stale:
        cores = available_cores()
        workers = workers or min(len(stale), cores)
        # each kernel gets its share of the cores (tinyunits and its BLAS both read
        # this), not every core each: kernels side by side would otherwise wait on
        # each other's threads; a count the user set wins
        share = max(1, cores // workers)
        ours = "TINYUNITS_NUM_THREADS" not in os.environ  # kernels inherit the environment
        os.environ.setdefault("TINYUNITS_NUM_THREADS", str(share))
        try:
            with ThreadPoolExecutor(workers) as pool:  # each kernel is a process of its own
                list(pool.map(execute, stale, [mode] * len(stale), [cache] * len(stale)))
        finally:  # the share was for these kernels, not for whatever this process runs next
            if ours:
                del os.environ["TINYUNITS_NUM_THREADS"]
    return [cached(s, mode, cache) for s in scripts]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default=os.environ.get("SITE_MODE", "quick"), choices=MODES)
    parser.add_argument("lessons", nargs="*")
    args = parser.parse_args()
    for path in execute_all(args.mode, args.lessons):
        print(path)
