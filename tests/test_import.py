"""Importing tinyunits changes nothing in the process beyond tinyunits itself: no
environment variable, no allocator setting (process tuning is an explicit call,
tinyunits.fast.steady_allocator). Each check runs in a fresh interpreter, with
tinyunits imported before NumPy and after it."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDERS = {"tinyunits first": "import tinyunits, numpy as np",
          "numpy first": "import numpy as np, tinyunits",
          "without tinyunits": "import numpy as np"}


def run_python(code):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")
           and k not in ("OPENBLAS_THREAD_TIMEOUT", "TINYUNITS_MALLOC")}
    env["PYTHONPATH"] = ROOT
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.parametrize("order", ["tinyunits first", "numpy first"])
def test_import_leaves_the_environment_unchanged(order):
    code = ("import os; before = dict(os.environ); " + ORDERS[order] + "; "
            "print(sorted(set(os.environ.items()) ^ set(before.items())))")
    assert run_python(code) == "[]"


RESIDENT = ("; import resource\n"
            "def resident():\n"
            "    with open('/proc/self/status') as f:\n"
            "        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS'))\n"
            "before = resident()\n"
            "a = np.ones(2 ** 20)  # 8 MB\n"
            "del a\n"
            "print((resident() - before) // 1024)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and glibc")
@pytest.mark.parametrize("order", ["tinyunits first", "numpy first"])
def test_a_freed_array_is_returned_as_without_tinyunits(order):
    """glibc gives an 8 MB block back to the kernel when it is freed; a library that
    tuned the allocator on import would keep it resident (8 MB)."""
    without = int(run_python(ORDERS["without tinyunits"] + RESIDENT))
    with_tinyunits = int(run_python(ORDERS[order] + RESIDENT))
    assert without < 2, without  # the check itself: glibc returned the block
    assert with_tinyunits == without, (with_tinyunits, without)
