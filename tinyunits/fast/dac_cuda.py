"""DAC on a GPU: the fused CUDA kernels of dac_cuda.cu for eq. (4), eq. (5) and eq. (7).

The drop-ins of dac.py hand their work here when `handles(...)` says so: CuPy arrays
of float32 or float64, none of 2^31 elements or more (the kernels index with int).
Everywhere else the drop-ins' blocked array code runs. tests/test_dac_cuda.py checks
the kernels against the reference (tinyunits.units.dac): compiled by nvcc, run on the
CPU under an emulation of CUDA's threads, and on a GPU when there is one.

Three kernels per layer instead of the composed formula's many launches per block:
the forward, dW and dB together (they sum the same terms over the batch), and dx.
Every launch goes through `launch(name, options, grid, block, args)`, which compiles
the kernel once (cuda.kernel) and runs it; the tests put a CPU emulator of CUDA in
its place, so they run this module and the drop-ins' dispatch too.

The kernels are DAC's whole backward: the student copy (docs/teaching.md) leaves
them out with the drop-ins.
"""
from __future__ import annotations

from pathlib import Path

from ..backend import get_array_module
from ..ops.conv import conv_output_size
from ..ops.elementwise import GELU, LeakyReLU
from . import cuda

KERNELS = ("dac_linear_forward", "dac_linear_backward_WB", "dac_linear_backward_x",
           "dac_conv_forward", "dac_conv_backward_WB", "dac_conv_backward_x")
SOURCE = Path(__file__).with_name("dac_cuda.cu").read_text()
SCALAR = {"float32": "float", "float64": "double"}
TILE = 16      # the tiled kernels run TILE x TILE threads per block
THREADS = 256  # threads per block of the conv's dx gather


def options(dtype, activation: str) -> tuple:
    """The compiler flags that make dac_cuda.cu's kernels for one dtype and activation."""
    return (f"-Dscalar_t={SCALAR[str(dtype)]}", f"-DPHI=PHI_{activation.upper()}",
            f"-DLEAKY_SLOPE={LeakyReLU().slope!r}", f"-DGELU_SATURATED={GELU.SATURATED!r}",
            f"-DTILE={TILE}")


def handles(*arrays, out_shape) -> bool:
    """Do the kernels take this call: are the arrays GPU arrays of float32/float64,
    all (and the output of `out_shape`) under 2^31 elements?"""
    out_size = 1
    for n in out_shape:
        out_size *= n
    return out_size < 2 ** 31 and all(
        cuda.on_gpu(a) and str(a.dtype) in SCALAR and a.size < 2 ** 31 for a in arrays)


def launch(name, options, grid, block, args):  # pragma: no cover - no GPU here
    """Run one kernel on the GPU, compiled on first use; tests put an emulator here."""
    cuda.kernel(SOURCE, name, options)(grid, block, args)


def _tiles(n: int) -> int:
    return (n + TILE - 1) // TILE


def _contiguous(*arrays):
    xp = get_array_module(arrays[0])
    return [xp.ascontiguousarray(a) for a in arrays]


def _ints(xp, *values):
    return tuple(xp.int32(v) for v in values)  # the kernels' int parameters, 32 bits as declared


# --------------------------------------------------------------------------- dense
def linear_forward(x, W, B, activation):
    """eq. (4): y[b,i] = sum_j W[i,j] phi(B[i,j] + x[b,j]), one kernel."""
    xp = get_array_module(x)
    x, W, B = _contiguous(x, W, B)
    (batch, n_in), n_out = x.shape, W.shape[0]
    y = xp.empty((batch, n_out), dtype=x.dtype)
    launch("dac_linear_forward", options(x.dtype, activation), (_tiles(n_out), _tiles(batch)),
           (TILE, TILE), (x, W, B, y) + _ints(xp, batch, n_in, n_out))
    return y


def linear_backward(x, W, B, g, activation, want):
    """eq. (7): (dx, dW, dB), with None for an input in `want` that needs no gradient."""
    xp = get_array_module(x)
    x, W, B, g = _contiguous(x, W, B, g)
    (batch, n_in), n_out = x.shape, W.shape[0]
    sizes, flags = _ints(xp, batch, n_in, n_out), options(x.dtype, activation)
    gx = gW = gB = None
    if want[1] or want[2]:
        gW, gB = xp.empty_like(W), xp.empty_like(B)
        launch("dac_linear_backward_WB", flags, (_tiles(n_in), _tiles(n_out)), (TILE, TILE),
               (x, W, B, g, gW, gB) + sizes)
    if want[0]:
        gx = xp.empty_like(x)
        launch("dac_linear_backward_x", flags, (_tiles(n_in), _tiles(batch)), (TILE, TILE),
               (x, W, B, g, gx) + sizes)
    return gx, gW if want[1] else None, gB if want[2] else None


# --------------------------------------------------------------------------- conv
def conv_output_shape(x, W, stride, padding) -> tuple:
    return (x.shape[0], W.shape[0]) + tuple(
        conv_output_size(size, W.shape[2], stride, padding) for size in x.shape[2:])


def _conv_sizes(xp, x, W, stride, padding):
    """The conv kernels' trailing arguments: batch, n_in, H, Wd, n_out, k, stride, pad, Ho, Wo."""
    Ho, Wo = conv_output_shape(x, W, stride, padding)[2:]
    return _ints(xp, *x.shape, W.shape[0], W.shape[2], stride, padding, Ho, Wo)


def conv_forward(x, W, B, stride, padding, activation):
    """eq. (5): one kernel over (output unit, output position)."""
    xp = get_array_module(x)
    x, W, B = _contiguous(x, W, B)
    y = xp.empty(conv_output_shape(x, W, stride, padding), dtype=x.dtype)
    positions = y.shape[0] * y.shape[2] * y.shape[3]
    launch("dac_conv_forward", options(x.dtype, activation),
           (_tiles(positions), _tiles(W.shape[0])), (TILE, TILE),
           (x, W, B, y) + _conv_sizes(xp, x, W, stride, padding))
    return y


def conv_backward(x, W, B, g, stride, padding, activation, want):
    """The conv analogue of eq. (7): (dx, dW, dB), None where `want` says no gradient."""
    xp = get_array_module(x)
    x, W, B, g = _contiguous(x, W, B, g)
    sizes, flags = _conv_sizes(xp, x, W, stride, padding), options(x.dtype, activation)
    gx = gW = gB = None
    if want[1] or want[2]:
        gW, gB_taps = xp.empty_like(W), xp.empty_like(W)
        taps = W.shape[1] * W.shape[2] * W.shape[3]
        launch("dac_conv_backward_WB", flags, (_tiles(taps), _tiles(W.shape[0])), (TILE, TILE),
               (x, W, B, g, gW, gB_taps) + sizes)
        gB = gB_taps.sum(axis=(2, 3))  # dB[i,j] = sum over the taps (p, q) of j
    if want[0]:
        gx = xp.empty_like(x)
        launch("dac_conv_backward_x", flags, ((x.size + THREADS - 1) // THREADS,), (THREADS,),
               (x, W, B, g, gx) + sizes)
    return gx, gW if want[1] else None, gB if want[2] else None
