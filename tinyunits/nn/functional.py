"""Stateless functions for use inside a forward (PyTorch's nn.functional)."""
from ..ops import (abs, avg_pool2d, batch_norm, conv2d, cross_entropy, dropout, gelu,  # noqa: F401
                   global_avg_pool2d, layer_norm, leaky_relu, linear, max_pool2d,
                   mse_loss, relu, sigmoid, tanh)
