"""tinyunits against PyTorch on the same machine: one table row per benchmark.

    python tests/benchmarks/run.py                     # every row, as a user's process runs
    python tests/benchmarks/run.py --only B1,B2 --repeat 3
    python tests/benchmarks/run.py --threads 1 --clock cpu   # on a busy machine
    python tests/benchmarks/run.py --device cuda       # tinyunits on CuPy, PyTorch on CUDA

What users get: each side runs in a process of its own, with no thread count set, so
each library takes its own default: the cores this process may use. PyTorch's process
is as it starts. Ours is set up as a training program sets itself up (`--process
training`, the default; the lessons do the same, lessons/_lesson.py): OpenBLAS's idle
threads sleep after 2^22 cycles (OPENBLAS_THREAD_TIMEOUT=22, before NumPy loads) and
glibc keeps a step's freed memory (tinyunits.fast.steady_allocator()). Importing
tinyunits tunes nothing, so a program that does not make these two settings runs as
`--process bare` measures (tests/benchmarks/README.md has both). A step is forward + backward + optimiser step, float32
(rows E1, E2: one epoch). The parent alternates the two processes: in each round
each side runs back to back for about `--round-seconds` (who goes first alternates,
with a short pause between them so that one library's idle threads have stopped
spinning before the other's run), and a time is the median over `--rounds`
rounds, in wall time. `--repeat N` does the whole row N times (fresh processes)
and reports the median of the N ratios, with the load average (1 minute) beside
each. The opt-in settings, printed in the table's header when used:

    --threads N      N threads for both (tinyunits.set_num_threads and BLAS's, torch's)
    --clock cpu      CPU time of each side's process instead of wall time (robust to
                     other jobs on the machine, but counts threads that spin)
    --malloc steady  glibc never returns memory to the kernel (no page faults for
                     fresh temporaries), for both

--device cuda: tinyunits on the CuPy backend and PyTorch on CUDA, the same rows;
wall time, with both devices synchronised before and after each timed run;
PyTorch's TF32 is turned off (matmul and cuDNN), so both sides compute in full
float32. Without CuPy or a CUDA device the script says so in one line and
exits with status 0 (nothing to measure). Peak memory is then device memory:
CuPy's pool allocations (a memory hook), PyTorch's max_memory_allocated.

ratio = ours / reference (lower is better). The reference is PyTorch running the
same model from the same initial numbers (the first losses are compared: note
"dloss"), or our own baseline (rows B6-lin, B7-relu: the unit's overhead).

Peak memory (CPU): how far the process's resident memory (peak RSS, VmHWM) rose
above what it was once the model was built, over the whole timed run: everything
training holds at its high point (activations, gradients, optimiser state, an
allocator's or a library's caches), measured the same way for both sides.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MiB = 2 ** 20
DAC_MEMORY_LIMIT = 1024 * MiB  # the target: DACLinear 512->512 at batch 4096 under 1 GiB
PAUSE = 0.15  # seconds between the two sides: OpenBLAS's idle threads spin ~0.1 s
OURS_REFERENCE = ("B6-lin", "B7-relu")  # rows whose reference is our own baseline


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=None,
                   help="threads for both libraries (default: each library's own default)")
    p.add_argument("--rounds", type=int, default=15, help="timed rounds per row")
    p.add_argument("--epoch-rounds", type=int, default=3,
                   help="timed rounds of the one-epoch rows E1, E2")
    p.add_argument("--round-seconds", type=float, default=0.3,
                   help="time each side runs per round")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each row N times (fresh processes); report the median ratio")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: tinyunits on CuPy, PyTorch on CUDA (wall clock, synchronised)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall (default): elapsed time; cpu: CPU time of each side's process")
    p.add_argument("--malloc", choices=("default", "steady"), default="default",
                   help="steady: glibc keeps freed memory for reuse (opt-in; default: "
                        "glibc as it is)")
    p.add_argument("--process", choices=("training", "bare"), default="training",
                   help="our side's process: set up as a training program (the lessons' "
                        "two settings; default) or bare (nothing set)")
    p.add_argument("--quick", action="store_true", help="5 short rounds per row")
    p.add_argument("--only", default="", help="comma-separated row ids, e.g. B1,B3,S, E")
    p.add_argument("--no-torch", action="store_true", help="leave the PyTorch column blank")
    p.add_argument("--worker", nargs=2, metavar=("ROW", "SIDE"), help=argparse.SUPPRESS)
    p.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tuned", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.device == "cuda" and args.clock == "cpu":
        p.error("--device cuda times with the wall clock (GPU work is not CPU time)")
    if args.quick:
        args.rounds, args.epoch_rounds, args.round_seconds = 5, 1, 0.05
    return args


def settings_flags(args):
    """The opt-in flags a side's process is started with (the parent's own)."""
    flags = ["--clock", args.clock, "--malloc", args.malloc, "--device", args.device]
    return flags + (["--threads", str(args.threads)] if args.threads else [])


def training_process(args, ours):
    """(environment, extra flags) of a side's process: ours, with --process training,
    as the lessons set up theirs (the thread timeout must be in place before NumPy loads
    OpenBLAS; the allocator is set by the process itself, --tuned)."""
    if not ours or args.process == "bare":
        return None, []
    return {**os.environ, "OPENBLAS_THREAD_TIMEOUT": os.environ.get(
        "OPENBLAS_THREAD_TIMEOUT", "22")}, ["--tuned"]


def set_threads(n):
    """Must run before numpy / torch are imported: BLAS reads these at load time."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def steady_malloc():
    """Make glibc serve every allocation from its heap and never give it back (opt-in).

    By default glibc maps each block above ~128 KB freshly from the kernel and
    unmaps it when freed (the threshold then adapts, up to 32 MB). A step that
    makes large temporaries then pays a page fault per 4 KB page, every step.
    """
    import ctypes
    import ctypes.util
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # from glibc's malloc.h
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        ok = libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1) == 1
    except (OSError, AttributeError):
        ok = False
    return "glibc malloc: no mmap, no trim (--malloc steady)" if ok else \
        "--malloc steady: not glibc, malloc left as it is"


# ----------------------------------------------------------------------------- rows
def rows(cases, device="cpu"):
    """(id, description, builder, target ratio or None).

    The targets are for the CPU (the speed issues set them against PyTorch on this
    machine's cores); with --device cuda no row has one, so none reads "MISSED"."""
    table = [
        ("B1", "MLP 784-800-800-10, batch 128", cases.mlp, 1.0),
        ("B2", "CNN c32-c32-pool-d256-d10, 1x28x28, b128", cases.cnn, 1.2),
        ("B3", "DACLinear 256->256, batch 512", cases.dac_linear, 0.8),
        ("B4", "DACConv2d 16->16 3x3 p1, 32x32, b64", cases.dac_conv, 1.0),
        ("B5", "HanNet 20 x HanLayer(256), batch 512", cases.han_net, 1.0),
        ("B6", "FocusingLinear 784->800, b512", cases.focusing, 1.0),
        ("B6-128", "B6 at batch 128", lambda: cases.focusing(128), None),
        ("B6-lin", "B6 over our Linear 784->800 (overhead)",
         lambda: cases.focusing(reference="linear"), None),
        ("B7", "B1 net with TMAF (8 intervals)", cases.mlp_tmaf, 1.2),
        ("B7-relu", "B7 over our B1 net with ReLU (overhead)",
         lambda: cases.mlp_tmaf(reference="relu"), None),
        ("H1", "HanNet lesson net (width 30), b100, momentum", cases.han_lesson_net, None),
        ("E1", "one epoch: lesson 1's VGG (--quick), 6000 imgs", cases.vgg_epoch, None),
        ("E2", "one epoch: lesson 5's F-MNIST net (--quick), 30000", cases.fashion_epoch, None),
    ]
    for b in (32, 64, 128, 256):
        table.append((f"S1-{b}", f"scaling: B1 at batch {b}", lambda b=b: cases.mlp(b), None))
    for b in (128, 256, 512, 1024):
        table.append((f"S3-{b}", f"scaling: B3 at batch {b}",
                      lambda b=b: cases.dac_linear(b), None))
    if device != "cpu":
        table = [(row_id, desc, build, None) for row_id, desc, build, _ in table]
    return table


def selected(row_id, only):
    return not only or any(row_id == o or row_id.startswith(o) for o in only)


# ----------------------------------------------------------------------------- one side
def cuda_unavailable():
    """Why --device cuda cannot run here (a one-line reason), or None when it can."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'tinyunits[gpu]')"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "CuPy sees no CUDA device"
    except Exception as err:  # CUDA runtime errors: no driver, no device
        return f"CuPy finds no usable CUDA device ({type(err).__name__}: {err})".splitlines()[0]
    return None


def synchronizer(device, side):
    """A function that waits until this side's queued device work is done."""
    if device != "cuda":
        return lambda: None
    if side == "ours":
        import cupy
        return cupy.cuda.Device().synchronize
    import cases
    return cases.torch.cuda.synchronize


def resident(field):
    """VmRSS or VmHWM (peak) of this process, in bytes (Linux)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))


def reset_peak():
    """Make VmHWM start again from the current RSS (Linux's clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_cupy(step):
    """Bytes of CuPy's memory pool the step holds at its high point."""
    import cupy

    class Peak(cupy.cuda.MemoryHook):
        name = "tinyunits-bench-peak"

        def __init__(self):
            super().__init__()
            self.now = self.peak = 0

        def malloc_postprocess(self, **kw):
            self.now += kw["mem_size"]
            self.peak = max(self.peak, self.now)

        def free_postprocess(self, **kw):
            self.now -= kw["mem_size"]

    gc.collect()
    cupy.cuda.Device().synchronize()
    with Peak() as hook:
        step()
        cupy.cuda.Device().synchronize()
    return hook.peak


def peak_torch_cuda(step):
    import torch
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def check_float32(step):
    """Every tensor of our forward graph and every gradient stays float32."""
    from tinyunits.tensor import _topological_order
    step.zero_grad()
    loss = step.loss_of()
    bad = {str(t.dtype) for t in _topological_order(loss) if t.dtype != "float32"}
    loss.backward()
    bad |= {str(p.grad.dtype) for p in step.params
            if p.grad is not None and p.grad.dtype != "float32"}
    step.zero_grad()
    return "" if not bad else f"float64 leak: {sorted(bad)}"


def worker(row_id, side, args):
    """One side of one row in this process: build it, then answer the parent's requests
    (JSON lines): {"steps": n} -> {"seconds"}, {"peak": 1} -> {"peak"} and exit."""
    import cases
    if args.device == "cuda":
        import tinyunits
        tinyunits.set_backend("cupy")
        if side == "ref":
            cases.DEVICE = "cuda"
            cases.torch.backends.cuda.matmul.allow_tf32 = False
            cases.torch.backends.cudnn.allow_tf32 = False
    if args.threads:
        import tinyunits
        tinyunits.set_num_threads(args.threads)
        if cases.torch is not None:
            cases.torch.set_num_threads(args.threads)

    def reply(**message):
        print(json.dumps(message), flush=True)

    builder = next(b for i, _, b, _ in rows(cases) if i == row_id)
    try:
        case = builder()
    except cases.UnitMissing as err:
        return reply(error=f"not available ({err})")
    step = case.ours if side == "ours" else case.ref
    sync, now = synchronizer(args.device, side), (
        time.process_time if args.clock == "cpu" else time.perf_counter)
    gc.collect()
    reset_peak()
    before = resident("VmRSS")  # the model is built; nothing has run yet
    note = check_float32(step) if side == "ours" and step.loss_of else ""
    reply(loss=float(step().item()), note=note)  # the first step's loss: the initial weights
    for line in sys.stdin:
        request = json.loads(line)
        if "steps" in request:
            sync()
            t = now()
            for _ in range(request["steps"]):
                step()
            sync()
            reply(seconds=(now() - t) / request["steps"])
        elif args.device == "cuda":
            step.zero_grad()
            return reply(peak=(peak_cupy(step) if side == "ours" else peak_torch_cuda(step)))
        else:
            return reply(peak=resident("VmHWM") - before)


class Side:
    """A side's process, asked for timings one request at a time."""

    def __init__(self, row_id, side, args):
        env, tuned = training_process(args, side == "ours" or row_id in OURS_REFERENCE)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", row_id, side,
             *settings_flags(args), *tuned], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=env)
        self.first = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            return dict(error=f"its process exited with status {self.proc.returncode}")
        return json.loads(line)

    def ask(self, **request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def median_step_times(sides, rounds, round_seconds, warm_up=2):
    """Median seconds per step of each side, the sides taking turns in every round.

    With warm_up, each side's turn also begins with one untimed step: a user's loop
    runs its steps back to back, and the first step after the pause is not one of
    those (on a VM, the first after an idle 0.15 s cost our B2 about 30 ms more, the
    second core waking from idle; PyTorch's no more: tests/benchmarks/README.md)."""
    for side in sides:  # warm-up: caches, allocator, lazily made optimiser state
        if warm_up:
            side.ask(steps=warm_up)
    counts = [max(1, int(round_seconds / max(side.ask(steps=1)["seconds"], 1e-6)))
              for side in sides]
    times = [[] for _ in sides]
    for r in range(rounds):
        order = list(range(len(sides)))
        for i in (order if r % 2 == 0 else order[::-1]):
            time.sleep(PAUSE)
            if warm_up:
                sides[i].ask(steps=1)
            times[i].append(sides[i].ask(steps=counts[i])["seconds"])
    return [statistics.median(ts) for ts in times]


def run_row(row_id, target, args, torch_ok):
    """One measurement of a row: both sides in processes of their own."""
    start_load = os.getloadavg()[0]
    names = ["ours"] + (["ref"] if torch_ok or row_id in OURS_REFERENCE else [])
    sides = [Side(row_id, name, args) for name in names]
    try:
        errors = [s.first["error"] for s in sides if "error" in s.first]
        if errors:
            return dict(id=row_id, note=errors[0])
        epochs = row_id.startswith("E")  # a step is an epoch: its calibration warms up
        times = median_step_times(sides, args.epoch_rounds if epochs else args.rounds,
                                  args.round_seconds, warm_up=0 if epochs else 2)
        peaks = [s.ask(peak=1)["peak"] / MiB for s in sides]
    finally:
        for s in sides:
            s.close()
    out = dict(id=row_id, ours=times[0] * 1e3, peak_ours=peaks[0],
               load=f"{start_load:.1f}-{os.getloadavg()[0]:.1f}")
    notes = [sides[0].first["note"]]
    if len(sides) > 1:
        out.update(ref=times[1] * 1e3, ratio=times[0] / times[1], peak_ref=peaks[1],
                   ref_name="ours" if row_id in OURS_REFERENCE else "torch")
        if out["ref_name"] == "torch":  # the same model: the same first loss
            lo, lr = sides[0].first["loss"], sides[1].first["loss"]
            notes.append(f"dloss {abs(lo - lr) / max(abs(lr), 1e-12):.0e}")
    out["notes"] = notes
    return out


def repeated_row(row_id, target, args, torch_ok):
    """run_row `--repeat` times; the median ratio (and its run's times), every ratio noted."""
    runs = [run_row(row_id, target, args, torch_ok) for _ in range(args.repeat)]
    timed = [r for r in runs if "ours" in r]
    if not timed:
        return runs[0]
    key = (lambda r: r.get("ratio", r["ours"]))
    timed.sort(key=key)
    out = dict(timed[len(timed) // 2])
    if args.repeat > 1:
        out["notes"] = out["notes"] + ["runs: " + ", ".join(
            f"{key(r):.2f} (load {r['load']})" for r in runs if "ours" in r)]
        out["load"] = "; ".join(r["load"] for r in runs if "ours" in r)
    if target is not None and "ratio" in out:
        out["notes"].append("met" if out["ratio"] <= target else "MISSED")
    out["note"] = ", ".join(n for n in out["notes"] if n)
    return out


def memory_child(clock):
    """M1 in its own process: peak RSS of one DACLinear 512->512 step at batch 4096."""
    import resource
    limit = 4 * DAC_MEMORY_LIMIT  # an unchunked layer needs ~4 GiB per (B, out, in) array
    resource.setrlimit(resource.RLIMIT_AS, (limit + 1024 * MiB, limit + 1024 * MiB))
    import cases
    try:
        case = cases.dac_linear_big()
        gc.collect()
        reset_peak()
        before = resident("VmRSS")
        now = time.process_time if clock == "cpu" else time.perf_counter
        t = now()
        case.ours()
        ms = (now() - t) * 1e3
        print(json.dumps(dict(ms=ms, peak=(resident("VmHWM") - before) / MiB)))
    except cases.UnitMissing as err:
        print(json.dumps(dict(error=f"unit not available ({err})")))
    except MemoryError:
        print(json.dumps(dict(error="MemoryError under a 5 GiB address-space limit")))


def run_memory_row(args):
    env, tuned = training_process(args, True)
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", *settings_flags(args),
           *tuned]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        res = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        res = dict(error=f"child failed: {proc.stderr.strip().splitlines()[-1:]}")
    if "error" in res:
        return dict(id="M1", note=res["error"])
    ok = "met" if res["peak"] * MiB < DAC_MEMORY_LIMIT else "MISSED"
    return dict(id="M1", ours=res["ms"], peak_ours=res["peak"],
                note=f"peak RSS < 1 GiB: {ok} (one step, not a median)")


# ----------------------------------------------------------------------------- table
def fmt(value, spec):
    return "" if value is None else format(value, spec)


def print_header(args, torch_version):
    import numpy
    import tinyunits as tu
    threads = (f"{args.threads} for both (--threads)" if args.threads else
               f"each library's default (tinyunits {tu.get_num_threads()}, torch "
               f"{_torch_threads() if torch_version else '-'})")
    print(f"# tinyunits benchmarks  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# machine: {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} for this "
          f"process), {_cpu_name()}; threads: {threads}; backend "
          f"{'cupy' if args.device == 'cuda' else tu.get_backend()}")
    if args.device == "cuda":
        import cupy
        name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
        torch_side = ("PyTorch on CUDA with TF32 off (matmul and cuDNN): full float32 on "
                      "both sides" if torch_version else "no PyTorch CUDA: reference left blank")
        print(f"# device: {name.decode() if isinstance(name, bytes) else name}, CuPy "
              f"{cupy.__version__}; {torch_side}; peak MB = device memory")
    rounds = f"{args.rounds} rounds (E rows: {args.epoch_rounds})"
    print(f"# numpy {numpy.__version__}, torch {torch_version or 'not installed'}; "
          f"{args.clock} time{' (--clock cpu)' if args.clock == 'cpu' else ''}, median of "
          f"{rounds} of ~{args.round_seconds}s a side after one untimed step (E rows: none), "
          f"each side in a process of its own"
          + (f"; median of {args.repeat} runs" if args.repeat > 1 else ""))
    malloc = steady_malloc() if args.malloc == "steady" else "glibc malloc as it is"
    malloc += ("; ours set up as a training program (--process training: "
               "OPENBLAS_THREAD_TIMEOUT=22, fast.steady_allocator())"
               if args.process == "training" else "; ours bare (--process bare)")
    peak = "" if args.device == "cuda" else "; peak MB = rise of peak RSS while training"
    print(f"# {malloc}{peak}; load average (1 min) at start: {_load()}")
    print()
    print("| row | benchmark | ours ms | ref ms | ratio | target | ours peak MB "
          "| ref peak MB | reference | load | notes |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")


def print_row(desc, target, r):
    print(f"| {r['id']} | {desc} | {fmt(r.get('ours'), '.2f')} | {fmt(r.get('ref'), '.2f')} "
          f"| {fmt(r.get('ratio'), '.2f')} | {fmt(target, '.1f')} "
          f"| {fmt(r.get('peak_ours'), '.1f')} | {fmt(r.get('peak_ref'), '.1f')} "
          f"| {r.get('ref_name', '')} | {r.get('load', '')} | {r.get('note', '')} |", flush=True)


def _torch_threads():
    import torch
    return torch.get_num_threads()


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return "unknown CPU"


def _load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        set_threads(args.threads)
    if args.malloc == "steady" and (args.worker or args.memory_child):
        steady_malloc()
    sys.path[:0] = [HERE, ROOT]
    if args.tuned:
        import tinyunits
        tinyunits.fast.steady_allocator()
    if args.memory_child:
        return memory_child(args.clock)
    if args.worker:
        return worker(*args.worker, args)
    if args.device == "cuda":
        why = cuda_unavailable()
        if why:
            print(f"run.py --device cuda: skipped, {why}")
            return
    import cases
    torch_version = None
    if cases.torch is not None and not args.no_torch:
        if args.device == "cpu" or cases.torch.cuda.is_available():
            torch_version = cases.torch.__version__
    print_header(args, torch_version)
    only = [o for o in args.only.split(",") if o]
    for row_id, desc, _, target in rows(cases, args.device):
        if selected(row_id, only):
            print_row(desc, target, repeated_row(row_id, target, args, bool(torch_version)))
    if selected("M1", only):
        row = (run_memory_row(args) if args.device == "cpu" else
               dict(id="M1", note="not run with --device cuda (a host address-space limit)"))
        print_row("DACLinear 512->512, batch 4096 (memory)", None, row)
    print(f"\n# load average at end: {_load()}")


if __name__ == "__main__":
    main()
