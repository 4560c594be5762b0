"""DAC's fused CUDA kernels against the composed path they replace, on one GPU.

    TINYUNITS_BACKEND=cupy python tests/benchmarks/dac_fused.py
    python tests/benchmarks/dac_fused.py --small        # a smoke run, any backend

Per row: one DAC layer's forward + backward (dx, dW, dB), float32, the median of 20
synchronised steps; "fused" is dac_cuda.cu's kernels (CuPy arrays take them), "composed"
the same layer with the kernels turned off (the drop-ins' blocked array code in
tinyunits.fast.dac, run by CuPy). The issue's calibration for the first row: 1.8 ms for three plain tiled kernels
on an H100, 57 ms composed in 2^24-element blocks.
"""
import statistics
import sys
import time

import tinyunits as tu
from tinyunits import backend, nn
from tinyunits.fast import dac_cuda

ROWS = [("DACLinear 1024->1024, batch 1024", lambda: nn.DACLinear(1024, 1024), (1024, 1024)),
        ("DACConv2d 32->32 3x3, 26x26, batch 1024", lambda: nn.DACConv2d(32, 32, 3),
         (1024, 32, 26, 26))]
SMALL = [("DACLinear 64->64, batch 32", lambda: nn.DACLinear(64, 64), (32, 64)),
         ("DACConv2d 4->4 3x3, 8x8, batch 4", lambda: nn.DACConv2d(4, 4, 3), (4, 4, 8, 8))]


def median_step_ms(make_layer, shape, steps=20):
    xp = backend.get_array_module()
    on_gpu = backend.get_backend() == "cupy"
    layer = make_layer()
    x = tu.tensor(backend.host_rng().normal(size=shape), requires_grad=True)
    times = []
    for k in range(steps + 3):  # 3 warm-up steps compile and cache the kernels
        if on_gpu:
            xp.cuda.Device().synchronize()
        start = time.perf_counter()
        layer.zero_grad()
        x.grad = None
        y = layer(x)
        y.backward(xp.ones(y.shape, dtype=y.dtype))
        if on_gpu:
            xp.cuda.Device().synchronize()
        if k >= 3:
            times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main(argv):
    handles = dac_cuda.handles
    print(f"backend {backend.get_backend()}; ms per forward + backward (median of 20)")
    for name, make_layer, shape in SMALL if "--small" in argv else ROWS:
        fused = median_step_ms(make_layer, shape)
        dac_cuda.handles = lambda *arrays, out_shape: False
        composed = median_step_ms(make_layer, shape)
        dac_cuda.handles = handles
        print(f"{name:<42} fused {fused:9.2f}   composed {composed:9.2f}   "
              f"ratio {fused / composed:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
