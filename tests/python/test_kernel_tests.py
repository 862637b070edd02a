"""kef.two_sample_test, independence_test, witness and causal_discovery: bitwise the reports of
`kef test ... --json` on the same rows and seed (one implementation, kef/kernel_tests.hpp)."""
import json

import numpy as np
import pytest

import kef
from conftest import run_kef


def command_report(exe, *args):
    report = json.loads(run_kef(exe, "test", *args, "--json").stdout)
    for sample in ("x", "y", "data"):
        if sample in report:
            report[sample].pop("file", None)
    return report


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    rng = np.random.default_rng(11)
    X = rng.normal(size=(70, 2))
    Y = rng.normal(size=(60, 2)) + [0.4, 0.0]
    Z = X[:, :1] ** 2 + 0.3 * rng.normal(size=(70, 1))      # depends on X
    for name, a in (("x", X), ("y", Y), ("z", Z)):
        np.save(d / f"{name}.npy", a)
    return d, X, Y, Z


def test_two_sample_is_the_commands(kef_exe, samples):
    d, X, Y, _ = samples
    for bandwidth, flag in (("median", "median"), (0.7, "0.7")):
        want = command_report(kef_exe, "two-sample", str(d / "x.npy"), str(d / "y.npy"),
                              "--permutations", "300", "--seed", "5", "--kernel-bandwidth", flag)
        got = kef.two_sample_test(X, Y, bandwidth=bandwidth, permutations=300, seed=5)
        assert got == want
    assert 0 <= got["p_value"]["permutation"] <= 1


def test_independence_is_the_commands(kef_exe, samples):
    d, X, _, Z = samples
    want = command_report(kef_exe, "independence", str(d / "x.npy"), str(d / "z.npy"),
                          "--permutations", "200", "--seed", "2")
    got = kef.independence_test(X, Z, permutations=200, seed=2, threads=1)
    assert got == want
    assert got["p_value"]["permutation"] < 0.05     # Z is a function of X plus noise


def test_witness_is_the_commands(kef_exe, samples, tmp_path):
    d, X, Y, _ = samples
    G = np.column_stack([np.linspace(-2, 2, 9), np.zeros(9)])
    np.save(tmp_path / "g.npy", G)
    want = command_report(kef_exe, "witness", str(d / "x.npy"), str(d / "y.npy"), "--grid",
                          str(tmp_path / "g.npy"), "--seed", "3", "--out", str(tmp_path / "w.csv"))
    want.pop("out")
    got = kef.witness(X, Y, G, seed=3)
    table = np.genfromtxt(tmp_path / "w.csv", delimiter=",", names=True)
    for column in ("mean", "lower", "upper", "sd"):
        np.testing.assert_array_equal(got.pop(column), table[column])
    assert got == want


def test_causal_discovery_is_the_commands(kef_exe, samples, tmp_path):
    _, X, _, Z = samples
    D = np.column_stack([X[:, 0], Z[:, 0], X[:, 1]])
    np.save(tmp_path / "d.npy", D)
    want = command_report(kef_exe, "causal", str(tmp_path / "d.npy"), "--permutations", "50",
                          "--seed", "1")
    got = kef.causal_discovery(D, columns=want["data"]["variables"], permutations=50, seed=1)
    assert got == want


def test_bad_arguments_name_themselves(samples):
    _, X, Y, _ = samples
    with pytest.raises(kef.ConfigError, match="threads"):
        kef.two_sample_test(X, Y, threads=1.5)
    with pytest.raises(kef.ConfigError, match="bandwidth"):
        kef.two_sample_test(X, Y, bandwidth="wide")
    with pytest.raises(kef.DataError, match="same dimension"):
        kef.two_sample_test(X, Y[:, :1].copy())
    with pytest.raises(kef.DataError, match="paired rows"):
        kef.independence_test(X, Y)
    with pytest.raises(ValueError):                 # kef.DataError is a ValueError
        kef.two_sample_test(X[:1], Y)
