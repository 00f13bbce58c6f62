import numpy as np
import pytest


def paper_linear_data(n_samples, seed, n_features=5):
    """The paper's linear-regression data: true parameters from the prior, noise std 1."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n_features + 1)
    X = rng.standard_normal((n_samples, n_features))
    y = X @ w[:-1] + w[-1] + rng.standard_normal(n_samples)
    return X, y


@pytest.fixture
def linear_data():
    return paper_linear_data
