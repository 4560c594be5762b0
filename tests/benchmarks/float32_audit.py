"""Does float32 stay float32? Every registered gradcheck case, run in float32.

    python tests/benchmarks/float32_audit.py          # exit status 1 on a leak

A float64 scalar or 0-d array slipped into an op promotes its whole output, and
every op after it, to float64: twice the memory traffic, and on a GPU often 30x
slower arithmetic. This builds each case of `python -m tinyunits.gradcheck` with
float32 defaults, runs forward and backward, and reports every op whose output,
and every gradient the engine receives (input, parameter, or intermediate), is
not float32.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import tinyunits as tu  # noqa: E402
from tinyunits import backend  # noqa: E402
from tinyunits.function import Function  # noqa: E402
from tinyunits.gradcheck import load_cases  # noqa: E402

seen = []

# Cases whose builder itself makes float64 arrays the cast below cannot reach.
BUILT_IN_FLOAT64 = {
    "batch_norm_eval": "the case's running statistics are float64 constants",
    "focusing_linear_pruned": "the case prunes in float64, so its mask is float64",
}


def _recording(original, what):
    def wrapped(*args, **kwargs):
        out = original(*args, **kwargs)
        if hasattr(out, "dtype") and out.dtype.kind == "f" and out.dtype != "float32":
            seen.append(f"{what}: {out.dtype}")
        return out
    return wrapped


def _audit(name, build):
    tu.manual_seed(0)
    tu.set_default_dtype("float64")  # as the builders expect; cast to float32 below
    try:
        built = build()
    finally:
        tu.set_default_dtype("float32")
    fn, inputs = built[0], built[1]
    module = built[2] if len(built) > 2 else None
    if module is not None:
        module.astype("float32")
    tensors = [tu.Tensor(x.astype("float32"), requires_grad=True) for x in inputs]
    del seen[:]
    y = fn(*tensors)
    if y.dtype != "float32":
        seen.append(f"output: {y.dtype}")
    y.backward(backend.get_array_module(y.data).ones_like(y.data))
    params = list(module.parameters()) if module is not None else []
    for t in tensors + params:
        if t.grad is not None and t.grad.dtype != "float32":
            seen.append(f"leaf gradient {tuple(t.shape)}: {t.grad.dtype}")
    return sorted(set(seen))


def main():
    # every forward output and every gradient passes through these two
    engine = sys.modules["tinyunits.tensor"]  # (tu.tensor is the function)
    original_call, original_sum_to = Function.__call__, engine.sum_to

    def call(self, *inputs):
        out = original_call(self, *inputs)
        if out.dtype.kind == "f" and out.dtype != "float32":
            seen.append(f"{type(self).__name__} forward: {out.dtype}")
        return out

    Function.__call__ = call
    engine.sum_to = _recording(original_sum_to, "a gradient")
    cases, failed = load_cases(), 0
    for name, build in sorted(cases.items()):
        if name in BUILT_IN_FLOAT64:
            print(f"{name:36s} skipped: {BUILT_IN_FLOAT64[name]}")
            continue
        leaks = _audit(name, build)
        failed += bool(leaks)
        print(f"{name:36s} {'float32' if not leaks else 'LEAK: ' + '; '.join(leaks)}")
    checked = len(cases) - len(BUILT_IN_FLOAT64)
    print(f"\n{checked - failed} of {checked} cases stay float32")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
