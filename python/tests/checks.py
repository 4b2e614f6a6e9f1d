"""Comparisons the Python tests share."""
import numpy as np
import torch


def close(actual, expected, rtol=1e-5):
    """Within rtol of the expected values' largest magnitude, elementwise."""
    actual = actual.float().numpy() if isinstance(actual, torch.Tensor) else actual
    np.testing.assert_allclose(actual, expected, rtol=0,
                               atol=rtol * max(1.0, np.abs(expected).max()))
