"""Shared fixtures of the Python package's tests: the kef command, small data, pipeline text."""
import os
import subprocess

import numpy as np
import pytest

LITE = {"type": "lite", "inducing_points": 30, "lambda_alpha": 1e-3}
KERNEL = {"type": "gaussian", "sigma": 1.2}
BASE = {"type": "gaussian", "std": 3.0}

# The pipeline kef.fit(X, LITE, KERNEL, BASE, seed=SEED) builds, as a file for `kef run`.
PIPELINE = """
schema_version = 1
seed = {seed}
[data]
type = "file"
path = "{path}"
split = {{ test = {test}, validation = 0 }}
[[model]]
name = "model"
[model.estimator]
type = "lite"
inducing_points = 30
lambda_alpha = 1e-3
[model.kernel]
type = "gaussian"
sigma = 1.2
[model.base_measure]
type = "gaussian"
std = 3.0
{evaluate}
"""


@pytest.fixture(scope="session")
def kef_exe():
    exe = os.environ.get("KEF_EXE")
    if not exe:
        pytest.fail("KEF_EXE is not set (ctest sets it to the kef command of the build tree)")
    return exe


@pytest.fixture(scope="session")
def data():
    """A two-dimensional, non-Gaussian sample (a banana) and held-out rows."""
    rng = np.random.default_rng(7)
    z = rng.normal(size=(260, 2))
    X = np.column_stack([z[:, 0], z[:, 1] + 0.5 * z[:, 0] ** 2 - 1.0])
    return X[:200].copy(), X[200:].copy()


def run_kef(exe, *args, cwd=None):
    r = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, f"kef {' '.join(args)} failed ({r.returncode}):\n{r.stderr}"
    return r
