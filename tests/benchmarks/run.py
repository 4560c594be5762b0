"""tinyunits against PyTorch on the same machine: one table row per benchmark.

    python tests/benchmarks/run.py                 # every row, 1 thread each
    python tests/benchmarks/run.py --threads 2 --only B1,B3
    python tests/benchmarks/run.py --quick         # fewer repeats (a smoke run)
    python tests/benchmarks/run.py --device cuda   # tinyunits on CuPy, PyTorch on CUDA

A step is forward + backward + SGD step, float32. Each time is the median over
`--rounds` rounds; in each round both sides run back to back (alternating who
goes first) for about `--round-seconds` each, so a change in machine load hits
both alike. Times are CPU time of this process by default (--clock cpu): on
a machine shared with other work, wall time mostly measures waiting for a core.
With more than one thread, prefer --clock wall on an idle machine. The thread
count is set for both: OMP/OPENBLAS/MKL_NUM_THREADS in
the environment before NumPy or PyTorch is imported, and torch.set_num_threads.

--device cuda: tinyunits on the CuPy backend and PyTorch on CUDA, the same rows;
wall time, with both devices synchronised before and after each timed run;
PyTorch's TF32 is turned off (matmul and cuDNN), so both sides compute in full
float32. Without CuPy or a CUDA device the script says so in one line and
exits with status 0 (nothing to measure). Peak memory is then device memory:
CuPy's pool allocations (a memory hook), PyTorch's max_memory_allocated.

ratio = ours / reference (lower is better). The reference is PyTorch running the
same model from the same initial numbers (the first losses are compared: column
"dloss"), or, for the overhead rows B6 and B7, our own baseline layer.

Peak memory of one step: ours with tracemalloc (NumPy reports its array buffers
to it), counting everything the step allocates - activations, gradients,
temporaries - but not the parameters and inputs that existed before. PyTorch's
with torch.profiler(profile_memory=True): the running sum of the allocations and
frees it attributes to each op, in op order (an op's internal scratch space that
it frees before returning is not seen).
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
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MiB = 2 ** 20
DAC_MEMORY_LIMIT = 1024 * MiB  # the target: DACLinear 512->512 at batch 4096 under 1 GiB


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS / OpenMP threads for both libraries (default 1)")
    p.add_argument("--rounds", type=int, default=15, help="timed rounds per row")
    p.add_argument("--round-seconds", type=float, default=0.2,
                   help="time each side runs per round")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: tinyunits on CuPy, PyTorch on CUDA (wall clock, synchronised)")
    p.add_argument("--clock", choices=("cpu", "wall"), default=None,
                   help="cpu: CPU time of this process (default on the CPU; robust to "
                        "other processes sharing the cores), wall: elapsed time "
                        "(always, with --device cuda)")
    p.add_argument("--malloc", choices=("steady", "default"), default="steady",
                   help="steady (default): glibc keeps freed memory for reuse, so no "
                        "step pays page faults for fresh temporaries; default: leave it")
    p.add_argument("--quick", action="store_true", help="5 short rounds per row")
    p.add_argument("--only", default="", help="comma-separated row ids, e.g. B1,B3,S")
    p.add_argument("--no-torch", action="store_true", help="leave the PyTorch column blank")
    p.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.device == "cuda" and args.clock == "cpu":
        p.error("--device cuda times with the wall clock (GPU work is not CPU time)")
    args.clock = args.clock or ("wall" if args.device == "cuda" else "cpu")
    if args.quick:
        args.rounds, args.round_seconds = 5, 0.05
    return args


def set_threads(n):
    """Must run before numpy / torch are imported: BLAS reads these at load time."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    if "numpy" in sys.modules:
        print("warning: numpy was imported before the thread count was set", file=sys.stderr)


def steady_malloc():
    """Make glibc serve every allocation from its heap and never give it back.

    By default glibc maps each block above ~128 KB freshly from the kernel and
    unmaps it when freed (the threshold then adapts, up to 32 MB, depending on
    what was freed before). A step that makes large temporaries then pays a page
    fault per 4 KB page, every step: a third of the CPU time of B2, and a row's
    time came to depend on which rows ran before it. Both libraries share this
    process, so both get the same allocator. Returns a note for the header.
    """
    import ctypes
    import ctypes.util
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # from glibc's malloc.h
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        ok = libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1) == 1
    except (OSError, AttributeError):
        ok = False
    return "glibc malloc: no mmap, no trim" if ok else "malloc left as it is (not glibc)"


# ----------------------------------------------------------------------------- rows
def rows(cases):
    """(id, description, builder, target ratio or None)."""
    table = [
        ("B1", "MLP 784-800-800-10, batch 128", cases.mlp, 1.0),
        ("B2", "CNN c32-c32-pool-d256-d10, 1x28x28, b128", cases.cnn, 1.5),
        ("B3", "DACLinear 256->256, batch 512", cases.dac_linear, 0.8),
        ("B4", "DACConv2d 16->16 3x3 p1, 32x32, b64", cases.dac_conv, 1.0),
        ("B5", "HanNet 20 x HanLayer(256), batch 512", cases.han_net, 1.0),
        ("B6", "FocusingLinear 784->800 vs Linear, b512", cases.focusing, 1.3),
        ("B6-128", "B6 at batch 128", lambda: cases.focusing(128), None),
        ("B7", "B1 net, TMAF (8 intervals) vs ReLU", cases.mlp_tmaf, 1.5),
        ("H1", "HanNet lesson net (width 30), b100, momentum", cases.han_lesson_net, None),
    ]
    for b in (32, 64, 128, 256):
        table.append((f"S1-{b}", f"scaling: B1 at batch {b}", lambda b=b: cases.mlp(b), None))
    for b in (128, 256, 512, 1024):
        table.append((f"S3-{b}", f"scaling: B3 at batch {b}",
                      lambda b=b: cases.dac_linear(b), None))
    return table


def selected(row_id, only):
    return not only or any(row_id == o or row_id.startswith(o) for o in only)


# ----------------------------------------------------------------------------- timing
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


def synchronizer(device, torch_ok):
    """A function that waits until both libraries' queued device work is done."""
    if device != "cuda":
        return lambda: None
    import cupy
    import cases

    def sync():
        cupy.cuda.Device().synchronize()
        if torch_ok:
            cases.torch.cuda.synchronize()
    return sync


def median_step_times(fns, rounds, round_seconds, clock, sync):
    """Median seconds per step of each fn, the fns interleaved in every round."""
    now = time.process_time if clock == "cpu" else time.perf_counter
    for f in fns:  # warm-up: caches, allocator, lazily made optimiser state
        for _ in range(3):
            f()
    counts = []
    for f in fns:
        sync()
        t = now()
        f()
        sync()
        counts.append(max(1, int(round_seconds / max(now() - t, 1e-6))))
    times = [[] for _ in fns]
    for r in range(rounds):
        order = list(range(len(fns)))
        for i in (order if r % 2 == 0 else order[::-1]):
            sync()
            t = now()
            for _ in range(counts[i]):
                fns[i]()
            sync()  # the device runs asynchronously: wait for the last step's work
            times[i].append((now() - t) / counts[i])
    return [statistics.median(ts) for ts in times]


def peak_ours(step, device="cpu"):
    """Bytes the step allocates at its high point (tracemalloc sees NumPy's buffers)."""
    if device == "cuda":
        return peak_cupy(step)
    step.zero_grad()
    gc.collect()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


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

    step.zero_grad()
    gc.collect()
    cupy.cuda.Device().synchronize()
    with Peak() as hook:
        step()
        cupy.cuda.Device().synchronize()
    return hook.peak


def peak_torch(step, device="cpu"):
    if device == "cuda":
        import torch
        step.zero_grad()
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    from torch.profiler import ProfilerActivity, profile
    step.zero_grad()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    current = peak = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        current += e.self_cpu_memory_usage
        peak = max(peak, current)
    return peak


def check_float32(step):
    """Every tensor of the forward graph and every gradient stays float32."""
    from tinyunits.tensor import _topological_order
    step.zero_grad()
    loss = step.loss_of()
    bad = {str(t.dtype) for t in _topological_order(loss) if t.dtype != "float32"}
    loss.backward()
    bad |= {str(p.grad.dtype) for p in step.params
            if p.grad is not None and p.grad.dtype != "float32"}
    step.zero_grad()
    return "" if not bad else f"float64 leak: {sorted(bad)}"


# ----------------------------------------------------------------------------- rows
def run_row(row_id, builder, target, args, torch_ok, sync):
    from cases import UnitMissing
    try:
        case = builder()
    except UnitMissing as err:
        return dict(id=row_id, note=f"unit not available ({err})")
    if case.ref_name == "torch" and not torch_ok:
        case.ref = None
    notes = [check_float32(case.ours)]
    if case.ref is not None and case.ref_name == "torch":
        lo, lr = case.loss_ours(), case.loss_ref()
        notes.append(f"dloss {abs(lo - lr) / max(abs(lr), 1e-12):.0e}")
    fns = [case.ours] + ([case.ref] if case.ref is not None else [])
    times = median_step_times(fns, args.rounds, args.round_seconds, args.clock, sync)
    out = dict(id=row_id, ours=times[0] * 1e3, peak_ours=peak_ours(case.ours, args.device) / MiB,
               ref_name=case.ref_name if case.ref is not None else "")
    if case.ref is not None:
        out.update(ref=times[1] * 1e3, ratio=times[0] / times[1])
        if case.ref_name == "torch":
            out["peak_ref"] = peak_torch(case.ref, args.device) / MiB
    if target is not None and "ratio" in out:
        notes.append("met" if out["ratio"] <= target else "MISSED")
    out["note"] = ", ".join(n for n in notes if n)
    return out


def memory_child(clock):
    """M1 in its own process: peak of one DACLinear 512->512 step at batch 4096."""
    import resource
    limit = 4 * DAC_MEMORY_LIMIT  # an unchunked layer needs ~4 GiB per (B, out, in) array
    resource.setrlimit(resource.RLIMIT_AS, (limit + 1024 * MiB, limit + 1024 * MiB))
    import cases
    try:
        case = cases.dac_linear_big()
        case.ours()
        now = time.process_time if clock == "cpu" else time.perf_counter
        t = now()
        case.ours()
        ms = (now() - t) * 1e3
        print(json.dumps(dict(ms=ms, peak=peak_ours(case.ours) / MiB)))
    except cases.UnitMissing as err:
        print(json.dumps(dict(error=f"unit not available ({err})")))
    except MemoryError:
        print(json.dumps(dict(error="MemoryError under a 5 GiB address-space limit")))


def run_memory_row(args):
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-child",
           "--threads", str(args.threads), "--clock", args.clock, "--malloc", args.malloc]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:
        res = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        res = dict(error=f"child failed: {proc.stderr.strip().splitlines()[-1:]}")
    if "error" in res:
        return dict(id="M1", note=res["error"])
    ok = "met" if res["peak"] * MiB < DAC_MEMORY_LIMIT else "MISSED"
    return dict(id="M1", ours=res["ms"], peak_ours=res["peak"],
                note=f"peak < 1 GiB: {ok} (one step, not a median)")


# ----------------------------------------------------------------------------- table
def fmt(value, spec):
    return "" if value is None else format(value, spec)


def print_header(args, torch_version, malloc_note):
    import numpy
    import tinyunits as tu
    print(f"# tinyunits benchmarks  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# machine: {os.cpu_count()} cores, {_cpu_name()}; threads per library: "
          f"{args.threads}; backend {tu.get_backend()}")
    if args.device == "cuda":
        import cupy
        name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
        torch_side = ("PyTorch on CUDA with TF32 off (matmul and cuDNN): full float32 on "
                      "both sides" if torch_version else "no PyTorch CUDA: reference left blank")
        print(f"# device: {name.decode() if isinstance(name, bytes) else name}, CuPy "
              f"{cupy.__version__}; {torch_side}; peak MB = device memory")
    print(f"# numpy {numpy.__version__}, torch {torch_version or 'not installed'}; "
          f"{args.clock} time, median of {args.rounds} interleaved rounds of "
          f"~{args.round_seconds}s each")
    print(f"# {malloc_note}; load average at start: {_load()}")
    print()
    print("| row | benchmark | ours ms | ref ms | ratio | target | ours peak MB "
          "| torch peak MB | reference | notes |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|")


def print_row(desc, target, r):
    print(f"| {r['id']} | {desc} | {fmt(r.get('ours'), '.2f')} | {fmt(r.get('ref'), '.2f')} "
          f"| {fmt(r.get('ratio'), '.2f')} | {fmt(target, '.1f')} "
          f"| {fmt(r.get('peak_ours'), '.1f')} | {fmt(r.get('peak_ref'), '.1f')} "
          f"| {r.get('ref_name', '')} | {r.get('note', '')} |", flush=True)


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
    set_threads(args.threads)
    malloc_note = steady_malloc() if args.malloc == "steady" else "glibc malloc defaults"
    sys.path[:0] = [HERE, ROOT]
    if args.memory_child:
        return memory_child(args.clock)
    if args.device == "cuda":
        why = cuda_unavailable()
        if why:
            print(f"run.py --device cuda: skipped, {why}")
            return
        import tinyunits
        tinyunits.set_backend("cupy")
    import cases
    torch_version = None
    if cases.torch is not None and not args.no_torch:
        cases.torch.set_num_threads(args.threads)
        if args.device == "cpu" or cases.torch.cuda.is_available():
            torch_version = cases.torch.__version__
    if args.device == "cuda" and torch_version:
        cases.DEVICE = "cuda"
        cases.torch.backends.cuda.matmul.allow_tf32 = False
        cases.torch.backends.cudnn.allow_tf32 = False
    print_header(args, torch_version, malloc_note)
    sync = synchronizer(args.device, torch_version)
    only = [o for o in args.only.split(",") if o]
    for row_id, desc, builder, target in rows(cases):
        if selected(row_id, only):
            print_row(desc, target, run_row(row_id, builder, target, args, torch_version, sync))
    if selected("M1", only):
        row = (run_memory_row(args) if args.device == "cpu" else
               dict(id="M1", note="not run with --device cuda (a host address-space limit)"))
        print_row("DACLinear 512->512, batch 4096 (memory)", None, row)
    print(f"\n# load average at end: {_load()}")


if __name__ == "__main__":
    main()
