"""DAC's fused CUDA kernels (tinyunits/fast/dac_cuda.cu) against the reference
(tinyunits/units/dac.py, on NumPy).

Three checks, each skipped cleanly where its tool is missing:
- nvcc: every kernel compiles for sm_90 (H100/H200), for both dtypes and every
  activation, with warnings and register spills as errors;
- g++: a CPU emulation of CUDA (tests/cuda_emulator.py) runs the kernels through the
  drop-ins' dispatch (DACLinearFn / DACConv2dFn build them) and dac_cuda's launches;
  they must match the reference on shapes that are and are not multiples of the tile,
  pass a float64 numerical-gradient check, and a planted off-by-one in any kernel must
  be caught; under AddressSanitizer no kernel reads or writes outside its arrays (a
  planted read past the end is reported), under ThreadSanitizer no shared memory is
  raced;
- CuPy (TINYUNITS_BACKEND=cupy, on a GPU): the Functions take the kernel path, match
  the reference, and pass a float64 gradcheck.
The emulation and nvcc checks do not depend on the backend: they run once per
`make test`, in its NumPy pass. The student copy has no drop-ins of exercises, nor
their kernels (they are DAC's whole backward): there this file skips.
"""
import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, fast, nn
from tinyunits.units.dac import ACTIVATIONS, DACConv2dFn, DACLinearFn

dac_cuda = pytest.importorskip("tinyunits.fast.dac_cuda",
                               reason="the student copy has no drop-ins of exercises")
from tinyunits.fast import cuda  # noqa: E402
from cuda_emulator import GXX, Emulator, kernel_signatures  # noqa: E402
from test_dac import host, off_kink  # noqa: E402

NVCC = shutil.which("nvcc")
KERNELS = sorted(kernel_signatures(dac_cuda.SOURCE))
ON_NUMPY = backend.get_backend() == "numpy"  # nvcc and the emulation run in that pass only
needs_nvcc = pytest.mark.skipif(NVCC is None or not ON_NUMPY,
                                reason="needs nvcc; runs on the NumPy backend")
needs_gxx = pytest.mark.skipif(GXX is None or not ON_NUMPY,
                               reason="the CPU emulation of CUDA needs g++; runs on the NumPy backend")
needs_gpu = pytest.mark.skipif(backend.get_backend() != "cupy",
                               reason="runs on the CuPy backend (TINYUNITS_BACKEND=cupy)")
# the CuPy backend puts every new tensor on the device: no host arrays to send to a layer
off_gpu = pytest.mark.skipif(backend.get_backend() == "cupy",
                             reason="host arrays: runs on the NumPy and strict backends")

# (batch, n_in, n_out): one tile exactly, then sizes that leave partial tiles everywhere
DENSE = [(16, 16, 16), (37, 45, 21), (1, 1, 1), (33, 17, 3)]
# (batch, n_in, H, W, n_out, k, stride, padding)
CONV = [(2, 3, 7, 6, 5, 3, 1, 1), (3, 2, 9, 8, 17, 3, 2, 0), (1, 1, 5, 5, 1, 2, 1, 0),
        (2, 4, 6, 7, 3, 3, 2, 2), (2, 2, 4, 5, 2, 5, 1, 2)]


def dense_case(rng, batch, n_in, n_out):
    return [rng.normal(size=s) for s in [(batch, n_in), (n_out, n_in), (n_out, n_in), (batch, n_out)]]


def conv_case(rng, batch, n_in, H, W, n_out, k, stride, padding):
    Ho, Wo = ((size + 2 * padding - k) // stride + 1 for size in (H, W))
    return [rng.normal(size=s) for s in [(batch, n_in, H, W), (n_out, n_in, k, k),
                                         (n_out, n_in), (batch, n_out, Ho, Wo)]]


def run(make_fn, arrays, dtype="float64"):
    """y and (dx, dW, dB) of make_fn()(x, W, B) for the cotangent g, on the current backend;
    and whether the Function took the kernel path."""
    *inputs, g = arrays
    ts = [tu.tensor(a, requires_grad=True, dtype=dtype) for a in inputs]
    fn = make_fn()
    y = fn(*ts)
    fused = getattr(fn, "fused", False)  # the reference has no kernel path
    y.backward(backend.asarray(g, dtype=dtype))
    return [host(y)] + [host(t.grad) for t in ts], fused


def normwise_errors(ours, reference):
    """max |ours - reference| / max |reference|, per array; inf where ours has NaN."""
    return [float(np.nan_to_num(abs(a - r), nan=np.inf).max() / max(abs(r).max(), 1e-300))
            for a, r in zip(ours, reference)]


@contextlib.contextmanager
def on_backend(name):
    old = backend.get_backend()
    backend.set_backend(name)
    try:
        yield
    finally:
        backend.set_backend(old)


def reference(make_fn, arrays):
    """What run gives for the reference (tinyunits/units/dac.py) on NumPy, in float64."""
    with on_backend("numpy"), fast.disabled():
        return run(make_fn, arrays)[0]


# --------------------------------------------------------------------------- nvcc
@needs_nvcc
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_nvcc_compiles_every_kernel(tmp_path, dtype, activation):
    source, cubin = tmp_path / "dac_cuda.cu", tmp_path / "dac_cuda.cubin"
    source.write_text(dac_cuda.SOURCE)
    build = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-std=c++11", "--Werror", "all-warnings",
                            "-Xptxas", "--warn-on-spills", *dac_cuda.options(dtype, activation),
                            str(source), "-o", str(cubin)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    assert KERNELS == sorted(dac_cuda.KERNELS)
    for name in KERNELS:
        assert name.encode() in cubin.read_bytes(), f"{name} missing from the cubin"


# --------------------------------------------------------------------------- the CPU emulation
@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    return Emulator(dac_cuda.SOURCE, tmp_path_factory.mktemp("cuda-emulator"))


@contextlib.contextmanager
def emulated_gpu(emulator, monkeypatch):
    """NumPy arrays count as GPU arrays and `emulator` (or any launcher) runs the kernels:
    the drop-ins of DACLinearFn and DACConv2dFn then take their kernel path exactly as on
    a GPU."""
    with on_backend("numpy"), monkeypatch.context() as patch:
        patch.setattr(cuda, "on_gpu", lambda a: isinstance(a, np.ndarray))
        patch.setattr(dac_cuda, "launch", emulator)
        yield


def emulated_vs_numpy(emulator, monkeypatch, make_fn, arrays, dtype):
    """Normwise errors of y, dx, dW, dB: emulated kernels in `dtype` against the reference
    in float64."""
    expected = reference(make_fn, arrays)
    with emulated_gpu(emulator, monkeypatch):
        ours, fused = run(make_fn, arrays, dtype)
    assert fused, "the Function did not take the kernel path"
    assert all(a.dtype == np.dtype(dtype) for a in ours)
    return normwise_errors(ours, expected)


TOLERANCE = {"float64": 1e-12, "float32": 1e-5}


@needs_gxx
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("shape", DENSE)
def test_emulated_dense_kernels_match_numpy(emulator, monkeypatch, rng, shape, activation):
    errors = emulated_vs_numpy(emulator, monkeypatch, lambda: DACLinearFn(activation),
                               dense_case(rng, *shape), "float64")
    assert max(errors) < TOLERANCE["float64"], errors


@needs_gxx
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("shape", CONV)
def test_emulated_conv_kernels_match_numpy(emulator, monkeypatch, rng, shape, activation):
    stride, padding = shape[-2:]
    errors = emulated_vs_numpy(emulator, monkeypatch,
                               lambda: DACConv2dFn(stride, padding, activation),
                               conv_case(rng, *shape), "float64")
    assert max(errors) < TOLERANCE["float64"], errors


@needs_gxx
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_emulated_float32_kernels_match_numpy(emulator, monkeypatch, rng, activation):
    dense = emulated_vs_numpy(emulator, monkeypatch, lambda: DACLinearFn(activation),
                              dense_case(rng, *DENSE[1]), "float32")
    stride, padding = CONV[1][-2:]
    conv = emulated_vs_numpy(emulator, monkeypatch, lambda: DACConv2dFn(stride, padding, activation),
                             conv_case(rng, *CONV[1]), "float32")
    assert max(dense + conv) < TOLERANCE["float32"], (dense, conv)


@needs_gxx
@pytest.mark.parametrize("dtype, big", [("float64", 1e160), ("float32", 1e20)])
def test_emulated_gelu_kernels_are_finite_at_a_large_magnitude(emulator, monkeypatch, rng,
                                                               dtype, big):
    """phi'(z) of GELU for |z| large enough that z * z overflows was inf * 0 = NaN; the
    kernels clip z as ops.gelu does, so they agree with NumPy there too."""
    errors = [e for make_fn, arrays in gelu_far_out(rng, big)
              for e in emulated_vs_numpy(emulator, monkeypatch, make_fn, arrays, dtype)]
    assert max(errors) < TOLERANCE[dtype], errors  # inf where a kernel gave NaN


def gelu_far_out(rng, big):
    """(make_fn, arrays) for a dense and a conv GELU layer with every other unit's B at
    +-big: z * z overflows there unless the kernels clip z."""
    dense = dense_case(rng, *DENSE[1])
    conv = conv_case(rng, *CONV[1])
    for arrays in (dense, conv):
        arrays[2][::2] = big * np.sign(arrays[2][::2])
    stride, padding = CONV[1][-2:]
    return [(lambda: DACLinearFn("gelu"), dense),
            (lambda: DACConv2dFn(stride, padding, "gelu"), conv)]


@needs_gxx
def test_emulated_kernels_skip_dx_for_an_input_without_gradient(emulator, monkeypatch, rng):
    # a network's input: no dx kernel runs, dW and dB are still right
    x, W, B, g = dense_case(rng, *DENSE[1])
    launched, grads = [], []

    def recorder(name, *launch):
        launched.append(name)
        emulator(name, *launch)

    for context in (on_backend("numpy"), emulated_gpu(recorder, monkeypatch)):
        with context:
            layer = nn.DACLinear(45, 21, activation="gelu").astype("float64")
            layer.weight.data, layer.bias.data = backend.asarray(W), backend.asarray(B)
            layer(tu.tensor(x, dtype="float64")).backward(backend.asarray(g))
            grads.append([host(layer.weight.grad), host(layer.bias.grad)])
    assert launched == ["dac_linear_forward", "dac_linear_backward_WB"]
    assert max(normwise_errors(grads[1], grads[0])) < TOLERANCE["float64"]


@needs_gxx
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_emulated_kernels_pass_gradcheck(emulator, monkeypatch, rng, activation):
    # float64 central differences of the kernels' own forward, along random directions
    # (every element would take thousands of emulated launches); shapes cross the tiles
    dense = nn.DACLinear(18, 17, activation=activation).astype("float64")
    conv = nn.DACConv2d(2, 3, 3, stride=2, padding=1, activation=activation).astype("float64")
    with emulated_gpu(emulator, monkeypatch):
        for layer, x in ((dense, off_kink(rng, 19, 18)), (conv, off_kink(rng, 3, 2, 7, 6))):
            layer.bias.data = 0.2 * rng.integers(-3, 4, size=layer.bias.shape)
            report = tu.gradcheck(layer, [x], module=layer, max_sweep=0, n_directions=4)
            assert report.ok and len(report.rows) == 3, str(report)


# A planted off-by-one in each kernel (all reads stay inside the arrays): the comparison
# with NumPy on shapes that are not multiples of the tile must catch every one.
PLANTED = [
    ("dac_linear_forward", "for (int jj = 0; jj < TILE; ++jj)", "for (int jj = 0; jj < TILE - 1; ++jj)"),
    ("dac_linear_backward_WB", "const int i_staged = blockIdx.y * TILE + tx;",
     "const int i_staged = blockIdx.y * TILE + tx + 1;"),
    ("dac_linear_backward_x", "(b < batch && i0 + tx < n_out)", "(b < batch && i0 + tx < n_out - 1)"),
    ("dac_conv_forward", "for (int r0 = 0; r0 < R; r0 += TILE)", "for (int r0 = 0; r0 + TILE < R; r0 += TILE)"),
    ("dac_conv_backward_WB", "for (int pp = 0; pp < TILE; ++pp)", "for (int pp = 1; pp < TILE; ++pp)"),
    ("dac_conv_backward_x", "const int hs = row + pad - p;", "const int hs = row + pad - p + 1;"),
    ("conv_input", "col = w * stride + q - pad;", "col = w * stride + q - pad - 1;"),
]


@needs_gxx
@pytest.mark.parametrize("kernel,correct,planted", PLANTED, ids=[p[0] for p in PLANTED])
def test_emulation_catches_a_planted_off_by_one(tmp_path, monkeypatch, rng, kernel, correct,
                                                planted):
    assert dac_cuda.SOURCE.count(correct) == 1, "the line to plant the bug in has changed"
    mutant = Emulator(dac_cuda.SOURCE.replace(correct, planted), tmp_path)
    if kernel.startswith("dac_linear"):
        make_fn, arrays = (lambda: DACLinearFn("tanh")), dense_case(rng, *DENSE[1])
    else:
        make_fn, arrays = (lambda: DACConv2dFn(2, 2, "tanh")), conv_case(rng, *CONV[3])
    errors = emulated_vs_numpy(mutant, monkeypatch, make_fn, arrays, "float64")
    assert max(errors) > 1e-3, f"{kernel}: the planted bug went unnoticed ({errors})"


@needs_gxx
def test_emulation_catches_a_grid_one_tile_short(emulator, monkeypatch, rng):
    # an off-by-one in the launch, n // TILE blocks for ceil(n / TILE): right when every size
    # is a multiple of the tile, wrong otherwise, which is why the shapes above are not
    monkeypatch.setattr(dac_cuda, "_tiles", lambda n: n // dac_cuda.TILE)
    exact = emulated_vs_numpy(emulator, monkeypatch, lambda: DACLinearFn("relu"),
                              dense_case(rng, *DENSE[0]), "float64")
    ragged = emulated_vs_numpy(emulator, monkeypatch, lambda: DACLinearFn("relu"),
                               dense_case(rng, *DENSE[1]), "float64")
    assert max(exact) < TOLERANCE["float64"] and min(ragged) > 1e-3, (exact, ragged)


# g++'s sanitizers watch the emulated kernels, in a child process (a sanitizer's library
# must be loaded before anything else). AddressSanitizer: no read or write leaves its
# array (on a GPU, an illegal-address error or a silent wrong read); a planted read past
# the end must be reported. ThreadSanitizer: no two threads of a block touch the same
# shared memory without a __syncthreads between them. It has no planted case: it
# reports a removed __syncthreads often but not always (its shadow memory keeps four
# accesses per word, and up to 256 threads share one), and a flaky test proves nothing.
def _runtime(library):
    path = subprocess.run([GXX, f"-print-file-name={library}"], capture_output=True,
                          text=True).stdout.strip() if GXX else ""
    return path if os.path.isfile(path) else None


SANITIZERS = {"address": (_runtime("libasan.so"), "ASAN_OPTIONS", "detect_leaks=0"),
              "thread": (_runtime("libtsan.so"), "TSAN_OPTIONS", "halt_on_error=1:exitcode=66")}
OUT_OF_BOUNDS = ("(i_staged < n_out && j < n_in) ? W[",    # the forward reads W one
                 "(i_staged < n_out && j <= n_in) ? W[")  # past the end of its rows


def sanitized_run(workdir, sanitizer, planted):
    """Every kernel on the shapes above, built with -fsanitize=<sanitizer> (in the child)."""
    assert dac_cuda.SOURCE.count(OUT_OF_BOUNDS[0]) == 1, "the line to plant the bug in has changed"
    source = dac_cuda.SOURCE.replace(*OUT_OF_BOUNDS) if planted == "planted" else dac_cuda.SOURCE
    emulator = Emulator(source, workdir, flags=(f"-fsanitize={sanitizer}",))
    rng, patch = np.random.default_rng(0), pytest.MonkeyPatch()
    # ThreadSanitizer's threads run several times slower: there, two ragged shapes per layer
    dense, conv = (DENSE, CONV) if sanitizer == "address" else (DENSE[1::2], CONV[1::2])
    errors = [emulated_vs_numpy(emulator, patch, lambda: DACLinearFn("tanh"),
                                dense_case(rng, *shape), "float64") for shape in dense]
    errors += [emulated_vs_numpy(emulator, patch, lambda: DACConv2dFn(*shape[-2:], "tanh"),
                                 conv_case(rng, *shape), "float64") for shape in conv]
    assert planted == "planted" or max(map(max, errors)) < TOLERANCE["float64"], errors


@needs_gxx
@pytest.mark.parametrize("sanitizer,planted", [("address", "clean"), ("address", "planted"),
                                               ("thread", "clean")])
def test_emulated_kernels_under_a_sanitizer(tmp_path, sanitizer, planted):
    runtime, variable, options = SANITIZERS[sanitizer]
    if runtime is None:
        pytest.skip(f"needs g++'s {sanitizer} sanitizer")
    env = dict(os.environ, LD_PRELOAD=runtime, **{variable: options},
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent)] + sys.path))
    child = subprocess.run([sys.executable, "-c", "import sys, test_dac_cuda as t; "
                            "t.sanitized_run(*sys.argv[1:])", str(tmp_path), sanitizer, planted],
                           env=env, capture_output=True, text=True)
    if planted == "clean":
        assert child.returncode == 0 and "Sanitizer" not in child.stderr, child.stderr[-3000:]
    else:
        assert "heap-buffer-overflow" in child.stderr and "in dac_linear_forward" in child.stderr, \
            child.stderr[-3000:]


@needs_gxx
def test_emulator_refuses_arguments_a_gpu_would_misread(emulator):
    x = np.zeros((2, 3))
    flags = dac_cuda.options("float64", "relu")
    args = (x, np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((2, 4)), np.int32(2), np.int32(3))
    with pytest.raises(TypeError, match="7 parameters, launched with 6"):
        emulator("dac_linear_forward", flags, (1, 1), (16, 16), args)
    with pytest.raises(TypeError, match="n_out is declared int"):
        emulator("dac_linear_forward", flags, (1, 1), (16, 16), args + (4,))
    with pytest.raises(TypeError, match="x must be a C-contiguous float64"):
        emulator("dac_linear_forward", flags, (1, 1), (16, 16),
                 (x.astype(np.float32),) + args[1:] + (np.int32(4),))



# --------------------------------------------------------------------------- off a GPU
@off_gpu
def test_host_arrays_take_the_numpy_path(rng):
    x, W, B = (backend.asarray(rng.normal(size=(3, 4))) for _ in range(3))
    assert not dac_cuda.handles(x, W, B, out_shape=(3, 3))
    fn = DACLinearFn("relu")
    fn(*(tu.tensor(a) for a in (x, W, B)))
    assert not fn.fused


def test_kernels_stop_at_two_to_the_31_elements(monkeypatch):
    monkeypatch.setattr(cuda, "on_gpu", lambda a: True)
    x = np.zeros((4, 3), np.float32)
    assert dac_cuda.handles(x, x, x, out_shape=(2 ** 16, 2 ** 15 - 1))
    assert not dac_cuda.handles(x, x, x, out_shape=(2 ** 16, 2 ** 15))
    assert not dac_cuda.handles(x.astype(np.float16), x, x, out_shape=(4, 4))


# --------------------------------------------------------------------------- on a GPU
@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_gpu_kernels_match_numpy(rng, activation, dtype):
    for make_fn, arrays in [(lambda: DACLinearFn(activation), dense_case(rng, 300, 257, 129)),
                            (lambda: DACConv2dFn(1, 1, activation), conv_case(rng, 8, 5, 13, 11, 7, 3, 1, 1)),
                            (lambda: DACConv2dFn(2, 0, activation), conv_case(rng, 4, 3, 12, 9, 17, 3, 2, 0))]:
        errors = gpu_vs_numpy(make_fn, arrays, dtype)
        assert max(errors) < TOLERANCE[dtype], errors


def gpu_vs_numpy(make_fn, arrays, dtype):
    """Normwise errors of y, dx, dW, dB: the GPU's kernels in `dtype` against the reference
    on NumPy in float64."""
    expected = reference(make_fn, arrays)
    ours, fused = run(make_fn, arrays, dtype)
    assert fused, "the Function did not take the kernel path"
    return normwise_errors(ours, expected)


@needs_gpu
@pytest.mark.parametrize("dtype, big", [("float64", 1e160), ("float32", 1e20)])
def test_gpu_gelu_kernels_are_finite_at_a_large_magnitude(rng, dtype, big):
    """The emulated test's cases on the GPU itself (its libm, its compiler's contractions)."""
    errors = [e for make_fn, arrays in gelu_far_out(rng, big)
              for e in gpu_vs_numpy(make_fn, arrays, dtype)]
    assert max(errors) < TOLERANCE[dtype], errors


@needs_gpu
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_gpu_kernels_pass_gradcheck(rng, activation):
    dense = nn.DACLinear(18, 17, activation=activation).astype("float64")
    conv = nn.DACConv2d(2, 3, 3, stride=2, padding=1, activation=activation).astype("float64")
    for layer, x in ((dense, off_kink(rng, 19, 18)), (conv, off_kink(rng, 3, 2, 7, 6))):
        layer.bias.data = backend.asarray(0.2 * rng.integers(-3, 4, size=layer.bias.shape))
        report = tu.gradcheck(layer, [x], module=layer)  # every element
        assert report.ok and len(report.rows) == 3, str(report)


@needs_gpu
def test_gpu_blocks_are_larger():
    assert cuda.block_elements() == 2 ** 24 and DACLinearFn().budget == 2 ** 24
