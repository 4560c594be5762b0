"""CUDA kernels on the CPU, for tests on machines without a GPU.

`Emulator(source, workdir)` compiles a CUDA source with g++ under cuda_shim.h into a
shared library and launches its kernels as a GPU would run them: one CPU thread per
CUDA thread of a block, meeting at every __syncthreads, the blocks one after another.
Each `extern "C" __global__` kernel gets a launcher, `emulate_<name>`, written from its
signature, which also tells ctypes the argument types.

It checks what a CPU can: index arithmetic, bounds, the shared-memory staging, the
arguments of every launch (their number, C-contiguous arrays of the kernel's scalar
type for pointers, numpy.int32 for int), and that a kernel writes every element of its
outputs (they are filled with NaN before the launch). It says nothing about speed,
warps, or the GPU's floating point (fused multiply-adds, its tanh), so a GPU agrees
with it to rounding, not bit for bit.

An Emulator is called as launch(name, options, grid, block, args), the signature of
tinyunits.fast.dac_cuda.launch, so the code that sets up each launch is tested too.
"""
import ctypes
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

SHIM = Path(__file__).with_name("cuda_shim.h")
GXX = shutil.which("g++")
SCALARS = {"float": np.float32, "double": np.float64}
KERNEL = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')


def kernel_signatures(source: str) -> dict:
    """{name: [(type, parameter name), ...]} of every extern "C" __global__ kernel."""
    return {name: [tuple(p.strip().rsplit(None, 1)) for p in params.split(",")]
            for name, params in KERNEL.findall(source)}


class Emulator:
    def __init__(self, source: str, workdir, flags=()):
        """`flags`: more g++ flags, e.g. ("-fsanitize=address",)."""
        self.source, self.workdir, self.flags, self.libraries = source, Path(workdir), flags, {}
        self.kernels = kernel_signatures(source)

    def _launchers(self) -> str:
        """C++ for one extern "C" launcher per kernel: grid, block, then the kernel's parameters."""
        code = []
        for name, params in self.kernels.items():
            declared = ", ".join(f"{t} {p}" for t, p in params)
            passed = ", ".join(p for _, p in params)
            code.append(f'extern "C" void emulate_{name}(unsigned gx, unsigned gy, unsigned gz, '
                        f'unsigned bx, unsigned by, unsigned bz, {declared})\n'
                        f'{{ emulate({{gx, gy, gz}}, {{bx, by, bz}}, [=] {{ {name}({passed}); }}); }}')
        return "\n".join(code) + "\n"

    def library(self, options: tuple):
        """The source compiled with `options` (-D flags), once per set of options."""
        if options not in self.libraries:
            program = self.source + "\n" + self._launchers()
            key = hashlib.sha1(repr((program, options, self.flags)).encode()).hexdigest()[:16]
            source, library = self.workdir / f"{key}.cu", self.workdir / f"{key}.so"
            source.write_text(program)
            build = subprocess.run(
                [GXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-Wall", "-Werror",
                 *self.flags, "-include", str(SHIM), *options, "-x", "c++", str(source), "-o", str(library)],
                capture_output=True, text=True)
            if build.returncode:
                raise RuntimeError(f"g++ could not build the emulated kernels:\n{build.stderr}")
            lib = ctypes.CDLL(str(library))
            for name, params in self.kernels.items():
                launcher = getattr(lib, f"emulate_{name}")
                launcher.argtypes = [ctypes.c_uint] * 6 + [_ctype(name, t) for t, _ in params]
                launcher.restype = None
            self.libraries[options] = lib
        return self.libraries[options]

    def __call__(self, name, options, grid, block, args):
        lib = self.library(tuple(options))
        scalar = next(SCALARS[o.split("=")[1]] for o in options if o.startswith("-Dscalar_t="))
        params = self.kernels[name]
        if len(args) != len(params):
            raise TypeError(f"{name}: {len(params)} parameters, launched with {len(args)} arguments")
        arguments = [_argument(name, param, a, scalar) for param, a in zip(params, args)]
        for (declared, _), a in zip(params, args):
            if declared.endswith("*") and not declared.startswith("const"):
                a.fill(np.nan)  # an output: whatever the kernel does not write shows up as NaN
        grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
        getattr(lib, f"emulate_{name}")(*grid, *block, *arguments)


def _ctype(kernel, declared):
    if declared.endswith("*"):
        return ctypes.c_void_p
    if declared == "int":
        return ctypes.c_int
    raise TypeError(f"{kernel}: the emulator knows pointers and int, not {declared!r}")


def _argument(kernel, param, a, scalar):
    """An argument for the parameter (type, name), refusing what a GPU would misread."""
    declared, name = param
    if declared.endswith("*"):
        if not isinstance(a, np.ndarray) or a.dtype != scalar or not a.flags.c_contiguous:
            raise TypeError(f"{kernel}: {name} must be a C-contiguous {np.dtype(scalar)} array, "
                            f"got {type(a).__name__} {getattr(a, 'dtype', '')}")
        return a.ctypes.data
    if not isinstance(a, np.int32):
        raise TypeError(f"{kernel}: {name} is declared int (32 bits) and needs a numpy.int32, "
                        f"got {type(a).__name__}")
    return int(a)
