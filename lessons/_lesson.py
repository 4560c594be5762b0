"""What every lesson shares, so that a lesson's body is the idea, the code, the figure.

    from _lesson import Results, figure, host, setup, start
    args, SIZE = setup("03_tmaf", "Lesson 3: trainable matrix activations",
                       full="the paper's sample counts, more epochs")
    results = Results("paper")           # the closing "paper vs ours" table
    args, SIZE, S, results = start("03_tmaf", "Lesson 3: ...", trials)  # the three in one call
    ...
    results.append((what, paper, ours, reproduced))
    results.add(what, ours, reproduced, rule=..., evidence=verdicts.Evidence.of(values, "store"))
    results.show()                       # the closing table, each rule once below it
    with bookkeeping("rule"): print(...)  # text a lesson prints that is not the experiment
    runs = grid("tmaf-widths", tmaf.width_trial, [dict(width=w, seed=s) for ...])
    trials, runs = trial_grid(tmaf, "tmaf-widths")  # the same, from tmaf.grids(mode)
    held = stored(tmaf, "tmaf-widths", by, value, paper)  # the store's paper-scale rows
    runs = held_whole(two_argument, "two_argument-sessions", by, lambda r: r)  # unprinted

SIZE is "tiny" (seconds: the test suite's smoke run), "quick" (the default, a few
minutes on 2 cores) or "full" (the paper's settings). The flags --tiny/--quick/--full
choose it; with none, the environment variable TINYUNITS_LESSON_MODE does (notebooks
use the variable). Figures go to args.out. A grid of independent runs goes through
grid(): in --full it is a tinyunits.sweep (resumable, spread by --workers N); stored()
prints, in every mode, what the store holds of the --full grid, and returns the groups
a verdict may read (lessons/verdicts.py holds the verdicts' rules; lessons/closing/ the
functions that add each lesson's rows, so that a lesson calls one per claim).

Importing this module also
- puts the checkout on sys.path (datasets.py and tinyunits from this checkout);
- tunes this process for training, as a program may and a library must not: OpenBLAS's
  idle threads sleep after 2^22 cycles instead of spinning for 2^28 (set before NumPy
  loads OpenBLAS; tinyunits' own threads otherwise wait for a core at every hand-off on
  a busy machine), and glibc keeps a step's freed memory for the next
  (tinyunits.fast.steady_allocator);
- draws figures off-screen (Agg) unless a notebook kernel chose a backend;
- with TINYUNITS_LESSON_SHARES=<file.json> in the environment, counts the characters the
  lesson prints to stdout by kind (KINDS; see bookkeeping()) and writes
  {kind: characters} to that file at exit (tools/lesson_shares.py reads it). Without the
  variable, stdout is left as it is.
"""
import argparse
import atexit
import collections
import contextlib
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "22")
import tinyunits  # noqa: E402
from lessons.verdicts import Evidence  # noqa: E402

tinyunits.fast.steady_allocator()

MODES = ("tiny", "quick", "full")
STORE = os.path.join(ROOT, "lessons", "results", "sweeps.sqlite")  # the --full sweeps' results
START = time.perf_counter()
OUT, MODE, ARGS = ".", "quick", None  # set by setup()
# What a lesson prints is one of these: a verdict rule's text, rows read from STORE, the
# closing table (what Results.show prints), or the experiment (everything else).
KINDS = ("rule", "store", "closing", "experiment")
SHARES = "TINYUNITS_LESSON_SHARES"


class _CountingStdout:
    """sys.stdout that counts the characters written through it (newlines included) under
    the kind bookkeeping() has set, "experiment" outside any."""

    def __init__(self, stream):
        self.stream, self.lesson_kind = stream, "experiment"
        self.lesson_counts = dict.fromkeys(KINDS, 0)

    def write(self, text):
        self.lesson_counts[self.lesson_kind] += len(text)
        return self.stream.write(text)

    def __getattr__(self, name):  # flush, fileno, encoding...: the real stream's
        return getattr(self.stream, name)


def _count_shares(path):
    counting = _CountingStdout(sys.stdout)
    sys.stdout = counting

    def write():
        with open(path, "w") as f:
            json.dump(counting.lesson_counts, f)
    atexit.register(write)


# The kind lives on the stream, not in this module: a test or tool may import this file both
# as _lesson and as lessons._lesson, and both must count into the one stdout. The variable
# leaves the environment, so that a lesson's worker processes do not write the file too.
if os.environ.get(SHARES) and not hasattr(sys.stdout, "lesson_kind"):
    _count_shares(os.environ.pop(SHARES))


@contextlib.contextmanager
def bookkeeping(kind: str):
    """Count what is printed inside as `kind` (one of KINDS) when TINYUNITS_LESSON_SHARES
    is set; else do nothing. The helpers here use it for the rule, store and closing
    text they print; a lesson that prints such text itself wraps it too."""
    if kind not in KINDS:
        raise ValueError(f"bookkeeping: kind must be one of {KINDS}, got {kind!r}")
    stream = sys.stdout
    if not hasattr(stream, "lesson_kind"):
        yield
        return
    before, stream.lesson_kind = stream.lesson_kind, kind
    try:
        yield
    finally:
        stream.lesson_kind = before


def setup(name: str, description: str, full: str = "the paper's settings"):
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="default: a few minutes on 2 cores")
    mode.add_argument("--full", action="store_true", help=full)
    mode.add_argument("--tiny", action="store_true", help="seconds; the test suite's smoke run")
    parser.add_argument("--out", default=os.path.join(ROOT, "figures", name))
    from tinyunits import sweep
    sweep.add_sweep_arguments(parser)  # --workers / --scheduler for the --full sweeps
    args, _ = parser.parse_known_args()  # known: a notebook kernel passes its own flags
    os.makedirs(args.out, exist_ok=True)
    flags = [m for m in MODES if getattr(args, m)]
    size = flags[0] if flags else os.environ.get("TINYUNITS_LESSON_MODE", "quick")
    if size not in MODES:
        raise ValueError(f"setup: TINYUNITS_LESSON_MODE must be one of {MODES}, got {size!r}")
    global OUT, MODE, ARGS
    OUT, MODE, ARGS = args.out, size, args
    return args, size


Lesson = collections.namedtuple("Lesson", "args mode sizes results")


def start(name: str, description: str, trials=None, full: str = "the paper's settings",
          reference: str = "paper", verdict: str = "reproduced", reasons: str = "show") -> Lesson:
    """A lesson's set-up in one call: setup(), this mode's sizes (trials.SIZES[mode]) and
    the closing table (Results with trials.PAPER as its claims and the sizes as the
    settings its reasons cite; reasons: where they print, see Results). trials: the lesson's
    module in lessons/trials/ (None: no sizes, no claims). -> Lesson(args, mode, sizes, results)."""
    args, mode = setup(name, description, full)
    sizes = trials.SIZES[mode] if hasattr(trials, "SIZES") else None
    results = Results(reference, verdict, claims=getattr(trials, "PAPER", None),
                      settings=sizes if isinstance(sizes, dict) else None, reasons=reasons)
    return Lesson(args, mode, sizes, results)


def grid(name: str, fn, trials: list) -> list:
    """A lesson's grid of independent runs (seeds, widths, variants): fn(settings) for
    each settings dict, results in the order of trials. In --full they go through
    tinyunits.sweep as the sweep `name`, so the --workers/--scheduler flags spread them
    and STORE keeps each finished run (a re-run computes only what is missing); in the
    other modes they run here, one after another, and nothing is stored. fn must live
    in an importable module (lessons/trials/): Dask's workers cannot import a script."""
    if MODE != "full":
        return [fn(settings) for settings in trials]
    from tinyunits import sweep
    results = sweep.run(name, fn, trials, store=STORE, workers=ARGS.workers,
                        scheduler=ARGS.scheduler)
    failed = sum(result is None for result in results)
    if failed:  # a table or figure of the grid would be wrong without them
        raise RuntimeError(f"grid: {failed} of {len(trials)} runs of {name!r} failed twice "
                           f"(tracebacks: the error column of {STORE}); the others are kept, "
                           f"and running the lesson again retries only these")
    return results


def trial_grid(module, name: str):
    """grid() of a trial module's grid `name` in this mode, module.grids(MODE)[name]: the
    trials that --full and `python -m lessons.trials` store -> (trials, results), in order."""
    fn, trials = module.grids(MODE)[name]
    return trials, grid(name, fn, trials)


def paper_sweep(module):
    """A trial module's paper grid (lessons/trials/). In --full: run it through
    tinyunits.sweep (finished trials are read from STORE, never recomputed), print
    its table, return (settings, results). In other modes: print the table of what
    the repository's store holds, if anything, and return None."""
    from tinyunits import sweep
    if MODE != "full":
        if os.path.exists(STORE):
            with bookkeeping("store"):
                print(f"From the store of --full runs ({os.path.relpath(STORE, ROOT)}):")
                print(module.table(STORE))
        return None
    settings = module.paper_trials()
    outcomes = sweep.run(module.SWEEP, module.TRIAL, settings, store=STORE,
                         workers=ARGS.workers, scheduler=ARGS.scheduler)
    with bookkeeping("store"):
        print(module.table(STORE))
    return settings, outcomes


def stored(module, name, by, value, paper=None, fmt="{:.3f}", what=""):
    """Print the paper-scale rows of sweep `name` that STORE holds, next to this run's:
    per group of trials (by(settings) -> label; None leaves a trial out), n, mean +- std, min - max of
    value(result) (what it is: `what`), and paper[label], the paper's number. value may be
    {quantity: function} instead: one table, a row per (label, quantity), keyed so in paper and
    in what this returns; a function returns None for a result without that quantity (a model
    that has no such thing), and a row of none but such results is left blank. The trials and
    their function are the --full ones:
    module.grids("full")[name], or module's paper sweep (SWEEP, TRIAL, paper_trials()). A group
    the store holds from other code than the trial function's is printed as STALE, one it holds
    in part with the trials it holds, marked partial, one it holds none of as "not run yet".
    -> {label: [values]} of the groups held whole from the current code (what a
    verdict should read before this run's one draw; a partial group is not among them)."""
    rows, trials = _rows(module, name)
    lines, whole = store_table(rows, trials, by, value, paper or {}, fmt)
    with bookkeeping("store"):
        print(f"Paper-scale rows of {name!r} (the store's --full trials)"
              + (f": {what}" if what else ""))
        print("\n".join(lines))
    return whole


def held_whole(module, name, by, value):
    """stored()'s return, printing nothing: for a verdict that reads what a table cannot
    print (a learning curve per run). -> {label: [value(result)]} of the groups held whole
    from the current code."""
    rows, trials = _rows(module, name)
    return _whole(_groups(rows, trials, by, {None: value})[1])


def _rows(module, name):
    """(STORE's rows of sweep `name`, each saying whether it is stale; its --full trials)."""
    from tinyunits import sweep
    full = module.grids("full") if hasattr(module, "grids") else {}
    fn, trials = full[name] if name in full else (module.TRIAL, module.paper_trials())
    return (sweep.load(name, STORE, fn=fn) if os.path.exists(STORE) else []), trials


def _groups(rows, trials, by, quantities):
    """The trials of each (label, quantity) cell and what the store holds of them ->
    (how many trials are wanted, {cell: dict(expected, current values, stale, absent)},
    how many are held from the current code, their trial seconds)."""
    from tinyunits import sweep
    cell = lambda label, quantity: label if quantity is None else (label, quantity)  # noqa: E731
    wanted, groups, held, seconds = {}, {}, 0, 0.0
    for settings in trials:
        label = by(settings)
        if label is None:  # a trial this table leaves out
            continue
        wanted[sweep.trial_key(settings)] = label
        for quantity in quantities:
            groups.setdefault(cell(label, quantity), dict(expected=0, current=[], stale=0, absent=0))[
                "expected"] += 1
    for row in rows:
        label = wanted.get(sweep.trial_key(row["settings"]))
        if label is None or row["status"] != "done":
            continue
        for quantity, of in quantities.items():
            g = groups[cell(label, quantity)]
            if row["stale"]:
                g["stale"] += 1
            elif (v := of(row["result"])) is None:  # this trial's model has no such quantity
                g["absent"] += 1
            else:
                g["current"].append(v)
        if not row["stale"]:
            held += 1
            seconds += row["seconds"] or 0.0
    return len(wanted), groups, held, seconds


def _whole(groups):
    """{cell: values} of the groups held whole from the current code."""
    return {key: g["current"] for key, g in groups.items()
            if not g["stale"] and len(g["current"]) == g["expected"]}


def store_table(rows, trials, by, value, paper, fmt):
    """stored()'s table from rows (sweep.load with fn: each row says whether it is
    stale) -> (lines, {label: values of the groups held whole and current})."""
    n_wanted, groups, held, seconds = _groups(rows, trials, by,
                                              value if isinstance(value, dict) else {None: value})
    text = {key: ", ".join(map(str, key)) if isinstance(key, tuple) else str(key) for key in groups}
    width = max(map(len, text.values())) + 2
    lines = [f"{'':<{width}}{'n':>4}  {'mean +- std':<22}{'min - max':<22}paper"]
    for key, g in groups.items():
        n, expected, values = len(g["current"]), g["expected"], g["current"]
        head = f"{text[key]:<{width}}"
        if g["stale"]:
            lines.append(f"{head}STALE: {g['stale']} of {expected} rows computed by other code "
                         f"than the trial function's now ({n} current); not shown")
        elif n == 0 and g["absent"]:  # a model without this quantity: a blank cell
            lines.append(head.rstrip())
        elif n == 0:
            lines.append(f"{head}not run yet (0 of {expected} trials)")
        else:  # whole, or partial: what a sweep stopped half-way holds is still measured
            mean = sum(values) / n
            if n > 1:
                std = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
                spread = f"{fmt.format(mean)} +- {fmt.replace('+', '').format(std)}"  # std: no sign
            else:  # one run has no spread to show, not a spread of 0
                spread = f"{fmt.format(mean)} (one run)"
            partial = "" if n == expected else f"(partial: {n} of {expected} trials) "
            lines.append(f"{head}{n:>4}  {spread:<22}"
                         f"{fmt.format(min(values)) + ' - ' + fmt.format(max(values)):<22}"
                         f"{partial}{paper.get(key, '')}".rstrip())
    lines.append(f"({held} of {n_wanted} trials stored from the current code: "
                 f"{seconds / 3600:.2f} h of trial time)")
    return lines, _whole(groups)


def elapsed() -> float:
    """Seconds since the lesson started."""
    return time.perf_counter() - START


def interleaved_times(steps: dict, reps: int) -> dict:
    """Wall seconds of each step() in steps, reps times, the steps taking turns so that
    all see the same machine load -> {name: [seconds of each repetition]}."""
    times = {name: [] for name in steps}
    for _ in range(reps):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return times


def figure(fig, name: str = None) -> str:
    """Save a matplotlib figure as OUT/name (or take the path a library plot wrote);
    in a notebook, show it."""
    if isinstance(fig, str):
        path = fig
    else:
        import matplotlib.pyplot as plt
        path = os.path.join(OUT, name)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
    if "ipykernel" in sys.modules:
        from IPython.display import Image, display
        display(Image(path))
    return path


def out(name: str) -> str:
    """Where a figure called name goes."""
    return os.path.join(OUT, name)


def as_test(history) -> dict:
    """A History whose "val" data was the test set, with its curves named truthfully
    (plot with keys=TEST_KEYS)."""
    return {"train loss": history["train_loss"], "test loss": history["val_loss"],
            "test accuracy": history["val_metric"]}


TEST_KEYS = ("train loss", "test loss", "test accuracy")


class Results(list):
    """Rows (what, reference, ours, holds[, why[, rule]]) for the closing table; show() prints it.
    holds=None marks a number shown for comparison with no claim attached ("-"); a string
    (e.g. "partly") is printed as it is. why, what the run measured that bears on a row that
    does not (fully) hold ("not measured: ..." where it cannot), is printed under the table
    (reasons="show") or, indented, under that row's verdict line (reasons="add": beside the
    computation, as the experiment's text, and the closing table stays short).

    claims, {what: (reference, why)}, keeps a lesson's paper numbers and its reasons as
    data beside its trials ({names} in a why are filled from the run's settings);
    add(what, ours, holds) then appends that row, next to the computation it summarises.
    evidence: {what: the Evidence (or text) each add() printed}."""

    def __init__(self, reference: str = "paper", verdict: str = "reproduced", claims=None,
                 settings=None, reasons: str = "show"):
        super().__init__()
        if reasons not in ("show", "add"):
            raise ValueError(f"Results: reasons must be 'show' or 'add', got {reasons!r}")
        self.reference, self.verdict, self.reasons = reference, verdict, reasons
        self.claims, self.settings = claims or {}, settings or {}
        self.evidence = {}

    def add(self, what: str, ours, holds, rule: str = None, *, evidence=None, n=None,
            mean=None, se=None, spread=None, source=None, **measured) -> None:
        """Append the row of claims[what] and print its one verdict line, so that a notebook
        shows each comparison in the cell that makes it: the claim, ours with the evidence
        the verdict read, the reference, the verdict. rule: the verdict's rule in words (its
        thresholds, and which evidence it read), printed once by show() under the table, not
        here. evidence: a verdicts.Evidence (or its text); or give its fields n, mean, se
        and/or spread, source ("store" or "this run") instead. measured: numbers the claim's
        reason cites ({names} in it, beside the run's settings)."""
        if what not in self.claims:
            raise KeyError(f"Results.add: no claim {what!r}; the claims are {list(self.claims)}")
        reference, why = self.claims[what]
        if holds is not None and not why:  # a verdict that may be NO must say why
            raise ValueError(f"Results.add: the claim {what!r} gives a verdict, so its reason "
                             "in claims must say what the run measured ({measured}), 'not "
                             "measured: ...' or 'a bug: ...'; it has none")
        fields = dict(n=n, mean=mean, se=se, spread=spread, source=source)
        if any(v is not None for v in fields.values()):
            if evidence is not None:
                raise TypeError(f"Results.add: {what!r}: give evidence= or its fields "
                                f"(n, mean, se, spread, source), not both")
            evidence = Evidence(**fields)
        self.append((what, reference, ours, holds, why.format(**self.settings, **measured), rule))
        seen = f" ({evidence})" if evidence is not None else ""
        if evidence is not None:
            self.evidence[what] = evidence
        with bookkeeping("experiment"):  # a verdict with its evidence, wherever it is called
            print(f"{what}: ours {ours}{seen}, {self.reference} {reference} -> {_mark(holds)}")
            if self.reasons == "add" and self[-1][4] and _mark(holds) not in ("yes", "-"):
                print(f"  {_failed(holds)}: {self[-1][4]}")

    def show(self) -> None:
        """The closing table; below it each distinct rule once, numbered as the table's rule
        column cites it; then the reasons of the rows that do not (fully) hold."""
        rules = list(dict.fromkeys(row[5] for row in self if len(row) > 5 and row[5]))
        number = {rule: str(i) for i, rule in enumerate(rules, 1)}
        head = ("result", self.reference, "ours", self.verdict) + (("rule",) if rules else ())
        rows = [(str(a), str(b), str(c), _mark(ok)) + ((number.get(why[1], "") if len(why) > 1
                                                        else "",) if rules else ())
                for a, b, c, ok, *why in self]
        widths = [max(len(r[i]) for r in rows + [head]) + 2 for i in range(len(head))]
        line = lambda r: "".join(f"{v:<{w}}" for v, w in zip(r, widths)).rstrip()  # noqa: E731
        with bookkeeping("closing"):
            print("\n" + line(head))
            for cells in rows:
                print(line(cells))
        with bookkeeping("rule"):
            for rule in rules:
                print(f"rule {number[rule]}: {rule}")
        with bookkeeping("closing"):
            for what, _, _, ok, *why in self:
                if self.reasons == "show" and why and why[0] and _mark(ok) not in ("yes", "-"):
                    cited = f" (rule {number[why[1]]})" if len(why) > 1 and why[1] else ""
                    print(f"{_failed(ok)}: {what}: {why[0]}{cited}")
            if MODE == "tiny":
                print("(--tiny trains for seconds: its numbers are a smoke test, not results)")
            print(f"mode {MODE}; wall time {elapsed():.0f} s; figures in {OUT}")


def _mark(ok) -> str:
    """A row's verdict as the closing table prints it."""
    return ok if isinstance(ok, str) else "-" if ok is None else "yes" if ok else "NO"


def _failed(ok) -> str:
    """How a reason names the verdict of a row that does not (fully) hold."""
    return "not reproduced" if _mark(ok) == "NO" else _mark(ok)


def host(t):
    """A host NumPy copy of a Tensor or a backend array (explicit on every backend)."""
    import tinyunits as tu
    return t.numpy() if isinstance(t, tu.Tensor) else tu.backend.to_host(t)
