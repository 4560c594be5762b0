"""The initialisers (tinyunits/init.py, PyTorch's nn.init): the statistics each promises,
and one message for a bad shape."""
import numpy as np
import pytest

from tinyunits import nn


def test_initialisers_have_the_promised_statistics():
    big = (400, 300)
    assert np.std(nn.init.he_normal(big)) == pytest.approx(np.sqrt(2 / 300), rel=0.02)
    assert np.abs(nn.init.he_uniform(big)).max() <= np.sqrt(6 / 300)
    lecun = nn.init.lecun_uniform(big)
    assert np.abs(lecun).max() <= np.sqrt(3 / 300)
    assert np.var(lecun) == pytest.approx(1 / 300, rel=0.02)
    assert np.abs(nn.init.xavier_uniform(big)).max() <= np.sqrt(6 / 700)
    assert np.abs(nn.init.torch_default(big)).max() <= 1 / np.sqrt(300)
    q = nn.init.orthogonal((30, 50))
    np.testing.assert_allclose(q @ q.T, np.eye(30), atol=1e-10)
    q = nn.init.orthogonal((50, 30))
    np.testing.assert_allclose(q.T @ q, np.eye(30), atol=1e-10)


@pytest.mark.parametrize("name", sorted(nn.init.INITIALISERS))
@pytest.mark.parametrize("shape, error", [((), TypeError), ([3, 2], TypeError),
                                          ((0, 3), ValueError), ((3, 0), ValueError),
                                          ((2, 2.0), TypeError)])
def test_initialiser_shapes(name, shape, error):
    nn.init.get(name)((3, 2))
    with pytest.raises(error, match="nn.init: shape must be"):
        nn.init.get(name)(shape)
