"""Thread defaults as PyTorch's: the cores this process may use, for tinyunits' pieces
and BLAS alike; set_num_threads and TINYUNITS_NUM_THREADS set BLAS's count too, and
a lesson leaves the count alone."""
import os
import subprocess
import sys

import pytest
import threadpoolctl

import tinyunits as tu
from tinyunits.fast import threads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORT = ("import os, threadpoolctl, tinyunits as tu; "
          "blas = [i['num_threads'] for i in threadpoolctl.threadpool_info() "
          "if i['user_api'] == 'blas']; "
          "print(tu.get_num_threads(), blas[0], os.environ.get('OMP_NUM_THREADS'))")


def blas_threads():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture
def restore(monkeypatch):
    monkeypatch.setattr(threads._State, "threads", None)
    blas = threadpoolctl.threadpool_limits(None)
    yield
    blas.restore_original_limits()


def run_python(code, **env):
    """(tinyunits threads, BLAS threads, OMP_NUM_THREADS) printed by a fresh interpreter."""
    clean = {k: v for k, v in os.environ.items() if k not in
             ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "OPENBLAS_THREAD_TIMEOUT", *threads.ENV)}
    clean["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "lessons")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**clean, **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_set_num_threads_sets_blas_too(restore):
    for n in (1, 2):
        tu.set_num_threads(n)
        assert tu.get_num_threads() == n
        assert blas_threads() and set(blas_threads()) == {n}


def test_default_is_the_cores_this_process_may_use():
    cores = str(len(os.sched_getaffinity(0)))
    assert run_python(REPORT) == [cores, cores, "None"]


def test_tinyunits_num_threads_reaches_blas():
    assert run_python(REPORT, TINYUNITS_NUM_THREADS="1") == ["1", "1", "None"]


def test_a_lesson_leaves_the_thread_count_alone():
    """_lesson used to set OMP_NUM_THREADS=1 for every lesson."""
    cores = str(len(os.sched_getaffinity(0)))
    assert run_python("import _lesson; " + REPORT) == [cores, cores, "None"]


# --------------------------------------------------------------------------- allocator
STEP = ("import resource, numpy as np, tinyunits\n"
        "steady = tinyunits.fast.steady_allocator()\n"
        "def step():\n"
        "    arrays = [np.ones(2 ** 18) for _ in range(40)]  # 80 MB made, then freed\n"
        "step(); step()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(5): step()\n"
        "faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
        "print(steady, faults // 5)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_steady_allocator_keeps_a_steps_memory_when_asked():
    """glibc hands a step's freed memory back to the kernel; steady_allocator() keeps it,
    unless the environment already says how glibc should behave."""
    steady, faults = run_python(STEP)
    assert steady == "True" and int(faults) < 1000, faults  # 80 MB would be ~20000 faults
    for env in (dict(TINYUNITS_MALLOC="default"), dict(MALLOC_TRIM_THRESHOLD_="131072")):
        steady, faults = run_python(STEP, **env)
        assert steady == "False" and int(faults) > 10000, (env, faults)  # left as it is
