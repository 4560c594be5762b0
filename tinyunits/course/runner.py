"""The grader's child: run the graded tree's Functions on the grader's inputs.

    python runner.py ROOT JOB        (grade.py starts one per exercise)

ROOT goes first on sys.path, so `import tinyunits` finds the graded code, never an
installed copy (the run stops if it does not). JOB is a folder from the grader:
job.json (each case's Function, by class and constructor state, and which inputs
require a gradient in each probe) and job.npz (inputs, two cotangents g and g2,
array state).

For every probe this builds the graded tree's Function, calls it on Tensors, hands
backward a read-only g, then calls backward a second time with g2, and writes back,
in result.npz, arrays only: the output, both backwards' gradients, and, as they are
after the first backward, g, the inputs and the Function's array attributes.
result.json says what backward returned and raised, and what it printed (words for
feedback).

This process decides nothing, not even whether backward changed g (g's read-only
flag is only there to make the mistake raise where it is made, as in the engine,
and the graded code may clear it): grading.py judges the arrays against its own
library's forward and the copies it kept, so nothing printed, written, changed or
exited with here can raise a score. A case
that raises, or calls sys.exit, is recorded and the next one runs. What a probe
prints through sys.stdout or sys.stderr is kept (its last TAIL bytes) for feedback;
what reaches the file descriptors 1 and 2 themselves goes to the grader's pipe,
never into the results. Only arrays of real numbers are sent: anything else
backward returns is sent as the name of its type. Once the results are written the
process ends at once (os._exit), so no atexit handler, thread or finaliser of the
graded code runs after them.
"""
import contextlib
import importlib
import io
import json
import os
import pathlib
import sys

try:
    import resource
except ImportError:  # Windows: no file-size limit
    resource = None

LIMIT = 256 * 2 ** 20  # bytes this process may write to one file (the results, or a runaway)
TAIL = 2000            # bytes kept of what one probe printed, characters of an error


class _Tail(io.BufferedIOBase):
    """A byte sink that keeps only the last TAIL bytes written to it."""

    def __init__(self):
        super().__init__()
        self.kept = b""

    def writable(self):
        return True

    def write(self, b):
        b = memoryview(b).cast("B")  # a huge write: only its tail is copied
        self.kept = (self.kept + bytes(b[-TAIL:]))[-TAIL:]
        return len(b)


def _stream(sink):
    """A text stream onto sink with what print and sys.stdout users expect (.buffer,
    .encoding): one that cannot fail on what it is given (odd characters escaped)."""
    return io.TextIOWrapper(sink, encoding="utf-8", errors="backslashreplace",
                            write_through=True)


def _said(err) -> str:
    """An exception as text, even one whose __str__ fails."""
    try:
        text = f"{type(err).__name__}: {err}"
    except BaseException:  # noqa: BLE001 - the graded code's exception, not ours
        text = f"{type(err).__name__}: (its message could not be made into text)"
    return text[:TAIL]


def _decode(value, sent):
    if isinstance(value, dict) and "array" in value:
        return sent[value["array"]].copy()
    if isinstance(value, dict) and "tuple" in value:
        return tuple(_decode(v, sent) for v in value["tuple"])
    if isinstance(value, list):
        return [_decode(v, sent) for v in value]
    return value


def _build(spec, sent):
    """The graded tree's class of that name, with the state the grader's constructor left."""
    cls = importlib.import_module(spec["module"])
    for part in spec["qualname"].split("."):
        cls = getattr(cls, part)
    fn = object.__new__(cls)  # that class itself, never a drop-in that replaces it
    fn.__dict__.update({k: _decode(v, sent) for k, v in spec["state"].items()})
    return fn


def saved_arrays(np, fn) -> dict:
    """The Function's array attributes (in lists or tuples too), by name (the grader
    names them so too, grading.expect)."""
    found = {}
    for name, value in vars(fn).items():
        if isinstance(value, np.ndarray):
            found[name] = value
        elif isinstance(value, (list, tuple)) and name != "inputs":
            found.update({f"{name}[{k}]": v for k, v in enumerate(value)
                          if isinstance(v, np.ndarray)})
    return found


def _record(np, result, key, arrays, out, prefix):
    """Keep what backward returned: arrays under key+i, the kind of each entry in out."""
    out["returned"] = type(result).__name__
    if not isinstance(result, (tuple, list)):
        return
    out["count"] = len(result)
    for i, a in enumerate(result):
        if a is None:
            kind = "None"
        elif isinstance(a, np.ndarray):  # only real numbers travel (an object array would pickle)
            kind = "array" if a.dtype.kind in "fiub" else f"array of dtype {a.dtype}"
        else:
            kind = type(a).__name__
        out[f"{prefix}{i}"] = kind
        if kind == "array":
            arrays[f"{key}.{prefix}{i}"] = np.array(a)


def _run(tinyunits, np, case, sent, c, key, wants, arrays, out):
    fn = _build(case["function"], sent)
    tensors = [tinyunits.Tensor(sent[f"{c}.in{i}"].copy(), requires_grad=i in wants)
               for i in range(case["n_inputs"])]
    out["stage"] = "forward"
    arrays[f"{key}.y"] = np.asarray(fn(*tensors).data).copy()
    g, g2 = _read_only(sent[f"{c}.g"]), _read_only(sent[f"{c}.g2"])
    out["stage"] = "backward"
    returned = {}
    _record(np, fn.backward(g), key, arrays, returned, "grad")
    out.update(returned)
    arrays[f"{key}.g_after"] = np.array(g)
    arrays.update({f"{key}.after{i}": np.asarray(t.data).copy() for i, t in enumerate(tensors)})
    arrays.update({f"{key}.saved_after.{name}": a.copy() for name, a in saved_arrays(np, fn).items()})
    try:
        quiet = _stream(_Tail())  # what it prints again is not shown twice
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            again = fn.backward(g2)
        _record(np, again, key, arrays, {}, "again")
    except BaseException as err:  # noqa: BLE001 - SystemExit too: feedback, not an end
        out["again_error"] = _said(err)


def _read_only(a):
    """A copy of a that raises where backward changes it in place, as in the engine,
    where one g may reach several Functions."""
    a = a.copy()
    a.flags.writeable = False
    return a


def _probe(tinyunits, np, case, sent, c, key, wants, arrays):
    out, printed = {"stage": "build"}, _Tail()
    stream = _stream(printed)
    try:
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
            _run(tinyunits, np, case, sent, c, key, wants, arrays, out)
    except BaseException as err:  # noqa: BLE001 - SystemExit too: this probe fails, not the run
        out["error"] = _said(err)
    out["printed"] = printed.kept.decode("utf-8", errors="replace")
    return out


def _write(job, info, arrays=None, np=None):
    if arrays:
        with open(job / "result.npz.part", "wb") as f:
            np.savez(f, **arrays)
        os.replace(job / "result.npz.part", job / "result.npz")
    (job / "result.json.part").write_text(json.dumps(info))
    os.replace(job / "result.json.part", job / "result.json")


def main(root, job):
    if resource is not None:  # POSIX: for good, the graded code cannot raise it again
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        limit = LIMIT if hard == resource.RLIM_INFINITY else min(LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    sys.path[0] = str(root)  # replaces this script's folder
    os.chdir(root)
    spec = json.loads((job / "job.json").read_text())
    try:
        import tinyunits
        tinyunits.set_default_dtype("float64")
    except BaseException as err:  # noqa: BLE001 - a broken tree is feedback, not a crash
        return _write(job, {"error": f"import tinyunits from {root} failed: {_said(err)}"})
    graded = pathlib.Path(tinyunits.__file__).resolve().parent
    if root not in graded.parents:
        return _write(job, {"error": f"import tinyunits found {graded}, outside {root}: "
                                     "refusing to grade"})
    np = tinyunits.backend.host_module()
    with np.load(job / "job.npz", allow_pickle=False) as f:
        sent = {k: f[k] for k in f.files}
    arrays, cases = {}, []
    for k, case in enumerate(spec["cases"]):
        cases.append([_probe(tinyunits, np, case, sent, f"c{k}", f"c{k}.p{j}", wants, arrays)
                      for j, wants in enumerate(case["probes"])])
    _write(job, {"cases": cases}, arrays, np)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve())
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)  # before any atexit handler, thread or finaliser of the graded code
