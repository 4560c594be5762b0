#!/usr/bin/env bash
# A lent GPU's checks in one call, most wanted first, each under its own time limit so
# that one that hangs leaves the others their turn (a session has 15 minutes of device
# time, a call 10):
#
#     bash tests/benchmarks/gpu_check.sh          # from the repository root, on the GPU
#
# Each step's output goes to $OUT/<step>.txt (OUT: the device tool's folder, else
# /tmp/gpu_check), and one line per step to standard output: its exit status and
# seconds. Then record what they say in tests/benchmarks/README.md ("On a GPU").
set -u
OUT=${OUT:-/tmp/gpu_check}
PY=${PY:-python}
mkdir -p "$OUT"

step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2 start=$SECONDS
    shift 2
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    echo "$name: exit $? in $((SECONDS - start)) s"
}

step machine 30 bash -c "nvidia-smi; $PY -c 'import cupy, numpy; print(cupy.__version__, numpy.__version__); cupy.show_config()'; $PY -c 'import tinyunits.backend as b; print(\"cupyx.cudnn:\", b.import_cudnn())'"
# the drop-ins that run CuPy code of their own: the conv (batch innermost, cuDNN), DAC's kernels
step fast_tests 150 env TINYUNITS_BACKEND=cupy $PY -m pytest -q -p no:cacheprovider \
    tests/test_fast_conv.py tests/test_fast_cudnn.py tests/test_fast_cuda.py tests/test_fast_dac.py
step bench_cuda 180 $PY tests/benchmarks/run.py --device cuda --only B1,B2,E1,E2
step dac_fused 60 env TINYUNITS_BACKEND=cupy $PY tests/benchmarks/dac_fused.py
step cupy_suite 150 env TINYUNITS_BACKEND=cupy $PY -m pytest -q -x -p no:cacheprovider tests
