"""tinyunits/validate.py's from_op: an error NumPy raises inside an op's forward (a
broadcast, a reshape, a concatenation that does not fit) reaches the user naming the op
and the shapes of the tensors that met there."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import ops


# an op whose arrays do not fit: (call, the error, the Function that must be named)
MISFITS = {
    "add": (lambda: tu.tensor(np.ones(2)) + tu.tensor(np.ones(3)), ValueError, "Add"),
    "sub": (lambda: tu.tensor(np.ones((2, 3))) - tu.tensor(np.ones((2,))), ValueError, "Sub"),
    "mul": (lambda: tu.tensor(np.ones((4, 3))) * [1.0, 2.0], ValueError, "Mul"),
    "div": (lambda: tu.tensor(np.ones(2)) / tu.tensor(np.ones(5)), ValueError, "Div"),
    "reshape": (lambda: tu.tensor(np.ones(6)).reshape(4), ValueError, "Reshape"),
    "reshape-str": (lambda: tu.tensor(np.ones(6)).reshape("a"), TypeError, "Reshape"),
    "transpose": (lambda: tu.tensor(np.ones((2, 2))).transpose(0, 2), ValueError, "Transpose"),
    "getitem": (lambda: tu.tensor(np.ones((2, 2)))[5], IndexError, "GetItem"),
    "getitem-axes": (lambda: tu.tensor(np.ones(2))[0, 0], IndexError, "GetItem"),
    "concatenate": (lambda: ops.concatenate([tu.tensor(np.ones((2, 2))),
                                             tu.tensor(np.ones((2, 3)))]), ValueError,
                    "Concatenate"),
    "pad": (lambda: ops.pad(tu.tensor(np.ones((2, 2))), ((1, 1), (1, 1), (1, 1))), ValueError,
            "Pad"),
    "pow": (lambda: tu.tensor([1, 2]) ** -1, ValueError, "Pow"),
}


@pytest.mark.parametrize("name", sorted(MISFITS))
def test_arrays_that_do_not_fit_an_op_are_an_error_naming_the_op_and_shapes(name):
    call, error, op = MISFITS[name]
    with pytest.raises(error, match=rf"^{op}: .*; got inputs \(\d"):
        call()  # was NumPy's bare message: no op, no shapes of the tensors that met there
