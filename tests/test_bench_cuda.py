"""`tests/benchmarks/run.py --device cuda` on a machine that cannot run it: one clear
line, exit status 0, no traceback (the benchmarks themselves are not tests)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).parent / "benchmarks" / "run.py"


def bench_cuda(env_path=None):
    env = dict(os.environ)
    if env_path:
        env["PYTHONPATH"] = os.pathsep.join([str(env_path), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(RUN), "--device", "cuda", "--only", "B1"],
                          capture_output=True, text=True, env=env, timeout=120)


def _cuda_here():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.skipif(_cuda_here(), reason="a CUDA device is here: run the benchmark itself")
def test_without_cupy_or_a_device_it_says_so_in_one_line():
    out = bench_cuda()
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.count("\n") == 1
    assert out.stdout.startswith("run.py --device cuda: skipped, CuPy ")


def test_cupy_without_a_device_says_so_in_one_line(tmp_path):
    fake = tmp_path / "cupy"
    (fake / "cuda").mkdir(parents=True)
    (fake / "__init__.py").write_text("from . import cuda\n")
    (fake / "cuda" / "__init__.py").write_text(
        "class runtime:\n"
        "    @staticmethod\n"
        "    def getDeviceCount():\n"
        "        raise RuntimeError('cudaErrorNoDevice: no CUDA-capable device is detected')\n")
    out = bench_cuda(tmp_path)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout == ("run.py --device cuda: skipped, CuPy finds no usable CUDA device "
                          "(RuntimeError: cudaErrorNoDevice: no CUDA-capable device is "
                          "detected)\n")


def test_the_cpu_targets_are_not_applied_to_gpu_rows():
    """The targets were set against PyTorch on the CPU; a GPU row measured against
    cuDNN must not read "met" or "MISSED" by them."""
    sys.path.insert(0, str(RUN.parent))
    try:
        import run
    finally:
        sys.path.remove(str(RUN.parent))
    cases = type("cases", (), {"__getattr__": lambda self, name: None})()
    cpu = {row_id: target for row_id, _, _, target in run.rows(cases)}
    cuda = {row_id: target for row_id, _, _, target in run.rows(cases, "cuda")}
    assert cpu.keys() == cuda.keys() and cpu["B1"] == 1.0
    assert set(cuda.values()) == {None}


def test_the_gpu_check_script_parses_and_names_files_that_exist():
    """tests/benchmarks/gpu_check.sh runs only on a lent GPU: here, bash reads it
    (no syntax error), every file it names is in the checkout, and its steps' limits
    fit one device call (600 s)."""
    import re
    script = RUN.parent / "gpu_check.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    named = re.findall(r"tests/[\w/]+\.py", text)
    root = RUN.parent.parent.parent
    assert named and all((root / path).is_file() for path in named), named
    steps = [re.match(r"step \w+ (\d+) ", line) for line in re.findall(r"^step .*", text, re.M)]
    assert len(steps) >= 4 and all(steps), steps
    assert sum(int(step[1]) for step in steps) <= 600
