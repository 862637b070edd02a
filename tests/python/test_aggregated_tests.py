"""kef.mmdagg, kef.hsicagg and kef.ksdagg: the aggregated kernel tests. MMDAgg and HSICAgg are bitwise
the reports of `kef test two-sample|independence --aggregate --json` on the same rows, options and seed
(one implementation, kef/aggregated_test_report.hpp); KSDAgg runs the same library test as the
evaluator ksdagg on the model's score."""
import json
import re
import struct
import subprocess

import numpy as np
import pytest

import kef
from conftest import BASE, KERNEL, LITE, run_kef

# Few draws: the most single tests here, HSICAgg's default 5 x 5 bandwidths, have weights 1/25, so at
# alpha = 0.05 B1 must be at least 499.
DRAWS = {"bootstrap_draws": 500, "level_draws": 300, "bisection_steps": 30}


def command_report(exe, *args):
    report = json.loads(run_kef(exe, "test", *args, "--aggregate", "--json").stdout)
    for sample in ("x", "y"):
        report[sample].pop("file", None)
    return report


def flags(options):
    out = []
    for key, value in options.items():
        out.append(f"--{key.replace('_', '-')}={value}")     # = keeps -1 a value
    return out


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    rng = np.random.default_rng(41)
    X = rng.normal(size=(60, 2))
    Y = rng.normal(size=(60, 2)) + [1.0, 0.0]         # shifted: the two-sample tests reject
    Y0 = rng.normal(size=(45, 2))                      # X's distribution, another size
    Z = np.sin(2 * X[:, :1]) + 0.2 * rng.normal(size=(60, 1))   # depends on X
    W = rng.normal(size=(60, 1))                       # independent of X
    arrays = {"x": X, "y": Y, "y0": Y0, "z": Z, "w": W}
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", a)
    return d, arrays


def check_structure(report, tests):
    """What every aggregated report must satisfy, whatever the data."""
    agg = report["aggregate"]
    single = agg["single_tests"]
    assert len(single) == tests
    b1 = agg["bootstrap_draws"]
    assert sum(t["weight"] for t in single) == pytest.approx(1.0, abs=1e-12)
    u = agg["level_correction"]
    assert 0 < u <= 1 / max(t["weight"] for t in single)
    for t in single:
        assert 1 / (b1 + 1) <= t["p_value"] <= 1
        assert t["p_value"] * (b1 + 1) == pytest.approx(round(t["p_value"] * (b1 + 1)), abs=1e-9)
        assert t["threshold"] == pytest.approx(u * t["weight"], rel=1e-12)
        assert t["reject"] == (t["p_value"] <= t["threshold"])
        assert t["bandwidth"] > 0
    assert agg["reject"] == any(t["reject"] for t in single)


@pytest.mark.parametrize("y, options", [
    ("y", {}),                                                       # equal sizes: wild bootstrap
    ("y0", {}),                                                      # unequal sizes: permutations
    ("y", {"kernels": "all_matern_l1", "number_bandwidths": 3, "weights": "centred",
           "approximation": "permutations", "alpha": 0.1}),
])
def test_mmdagg_is_the_commands(kef_exe, samples, y, options):
    d, a = samples
    options = {"number_bandwidths": 5, **DRAWS, **options}
    want = command_report(kef_exe, "two-sample", str(d / "x.npy"), str(d / f"{y}.npy"), "--seed", "7",
                          *flags(options))
    got = kef.mmdagg(a["x"], a[y], seed=7, **options)
    assert got == want
    assert got["aggregate"]["approximation"] == ("wild bootstrap" if y == "y" and not options.get(
        "approximation") else "permutations")


def test_hsicagg_is_the_commands(kef_exe, samples):
    d, a = samples
    options = {**DRAWS, "hsic_power": 3.0, "hsic_lower": -1, "hsic_upper": 1, "alpha": 0.1}
    want = command_report(kef_exe, "independence", str(d / "x.npy"), str(d / "z.npy"), "--seed", "3",
                          *flags(options))
    got = kef.hsicagg(a["x"], a["z"], seed=3, **options)
    assert got == want
    assert all("bandwidth_y" in t for t in got["aggregate"]["single_tests"])


def test_results_do_not_depend_on_threads(samples):
    _, a = samples
    one = kef.mmdagg(a["x"], a["y"], number_bandwidths=5, seed=2, threads=1, **DRAWS)
    assert kef.mmdagg(a["x"], a["y"], number_bandwidths=5, seed=2, threads=2, **DRAWS) == one
    assert kef.mmdagg(a["x"], a["y"], number_bandwidths=5, seed=2, threads=3, **DRAWS) == one
    other = kef.mmdagg(a["x"], a["y"], number_bandwidths=5, seed=3, threads=1, **DRAWS)
    quantiles = [[t["quantile"] for t in r["aggregate"]["single_tests"]] for r in (one, other)]
    assert quantiles[0] != quantiles[1]                 # the draws do depend on the seed
    one = kef.hsicagg(a["x"], a["z"], seed=2, threads=1, **DRAWS)
    assert kef.hsicagg(a["x"], a["z"], seed=2, threads=2, **DRAWS) == one


def test_decisions(samples):
    _, a = samples
    shifted = kef.mmdagg(a["x"], a["y"], number_bandwidths=5, seed=1, **DRAWS)
    check_structure(shifted, 10)
    assert shifted["aggregate"]["reject"]
    assert min(t["p_value"] for t in shifted["aggregate"]["single_tests"]) == 1 / 501
    same = kef.mmdagg(a["x"], a["y0"], number_bandwidths=5, seed=1, **DRAWS)
    check_structure(same, 10)
    assert not same["aggregate"]["reject"]
    assert max(t["p_value"] for t in same["aggregate"]["single_tests"]) > 0.1
    dependent = kef.hsicagg(a["x"], a["z"], seed=1, **DRAWS)
    check_structure(dependent, 25)
    assert dependent["aggregate"]["reject"]
    independent = kef.hsicagg(a["x"], a["w"], seed=1, **DRAWS)
    check_structure(independent, 25)
    assert not independent["aggregate"]["reject"]


def test_bad_options_name_themselves(samples):
    _, a = samples
    X, Y = a["x"], a["y"]
    cases = [
        ("alpha", {"alpha": 1.5}),
        ("alpha", {"alpha": 0.0}),
        ("bootstrap_draws", {"bootstrap_draws": 50}),       # 1/51 > alpha * 1/20: cannot reject
        ("bootstrap_draws", {"bootstrap_draws": 0}),
        ("bootstrap_draws", {"bootstrap_draws": 100.0}),
        ("level_draws", {"level_draws": -1}),
        ("bisection_steps", {"bisection_steps": 0}),
        ("kernels", {"kernels": "wide"}),
        ("weights", {"weights": "random"}),
        ("number_bandwidths", {"number_bandwidths": 1}),
        ("approximation", {"approximation": "bootstrap"}),
        ("threads", {"threads": 1.5}),
        ("seed", {"seed": -1}),
    ]
    for name, options in cases:
        with pytest.raises(kef.ConfigError, match=name):
            kef.mmdagg(X, Y, **options)
    for name, options in [("hsic_power", {"hsic_power": 1.0}), ("hsic_lower", {"hsic_lower": 2}),
                          ("hsic_upper", {"hsic_upper": 2.5}), ("alpha", {"alpha": -0.1})]:
        with pytest.raises(kef.ConfigError, match=name):
            kef.hsicagg(X, a["z"], **options)
    with pytest.raises(ValueError, match="X, the first sample, has 1 row;"):   # DataError is a ValueError
        kef.mmdagg(X[:1].copy(), Y)
    with pytest.raises(kef.DataError, match="dimension"):
        kef.mmdagg(X, Y[:, :1].copy())
    with pytest.raises(kef.DataError, match="paired samples of 60 and 45"):
        kef.hsicagg(X, a["y0"])
    with pytest.raises(TypeError, match="float64"):
        kef.mmdagg(X.astype(np.float32), Y)


def test_bad_options_fail_the_command_alike(kef_exe, samples):
    """The command refuses the same values (exit 2, nothing on stdout), naming its flag."""
    d, _ = samples
    for flag, value in (("--alpha", "1.5"), ("--bootstrap-draws", "50"), ("--kernels", "wide")):
        r = subprocess.run([kef_exe, "test", "two-sample", str(d / "x.npy"), str(d / "y.npy"), "--aggregate",
                            flag, value, "--json"], capture_output=True, text=True)
        assert r.returncode == 2 and r.stdout == "" and flag in r.stderr, (flag, r.stderr)


# ---------------------------------------------------------------------------------------------------
# KSDAgg of a fitted model

@pytest.fixture(scope="module")
def model(data):
    X_train, _ = data
    return kef.fit(X_train, LITE, KERNEL, BASE, seed=1, quiet=True)


def test_ksdagg_is_the_evaluators_test(model, data, capsys):
    """The same bandwidths and statistics as the evaluator ksdagg (which prints them to 6 digits):
    the same score, kernel and collection. Only the draws' stream differs."""
    _, X_test = data
    assert model.preprocessing == "none"              # so data units are the model's coordinates
    options = {"number_bandwidths": 4, **DRAWS}
    got = kef.ksdagg(model, X_test, seed=5, **options)
    assert got["test"] == "goodness-of-fit" and got["model"] == model.name
    assert got["x"] == {"rows": X_test.shape[0], "columns": 2}
    check_structure(got, 4)
    metrics = kef.evaluate(model, X_test, "ksdagg", seed=5, quiet=False, **options)
    notes = re.findall(r"imq bandwidth ([^:]+): KSD² ([^,]+),", capsys.readouterr().err)
    assert len(notes) == 4
    for t, (bandwidth, statistic) in zip(got["aggregate"]["single_tests"], notes):
        assert t["kernel"] == "imq"
        assert t["bandwidth"] == pytest.approx(float(bandwidth), rel=1e-5)
        assert t["statistic"] == pytest.approx(float(statistic), rel=1e-5, abs=1e-12)
    assert metrics["ksdagg_reject"] in (0.0, 1.0)


def test_ksdagg_decisions_and_threads(model, data):
    _, X_test = data
    far = kef.ksdagg(model, X_test + [2.5, 0.0], number_bandwidths=4, seed=2, **DRAWS)
    check_structure(far, 4)
    assert far["aggregate"]["reject"]
    one = kef.ksdagg(model, X_test, number_bandwidths=4, seed=2, threads=1, **DRAWS)
    assert kef.ksdagg(model, X_test, number_bandwidths=4, seed=2, threads=2, **DRAWS) == one


def test_ksdagg_bad_input(model, data):
    _, X_test = data
    with pytest.raises(TypeError, match="model"):
        kef.ksdagg("lite", X_test)
    with pytest.raises(kef.DataError, match="columns"):
        kef.ksdagg(model, X_test[:, :1].copy())
    with pytest.raises(ValueError, match="number_bandwidths"):
        kef.ksdagg(model, X_test, number_bandwidths=1)
    with pytest.raises(kef.ConfigError, match="weights"):
        kef.ksdagg(model, X_test, weights="heavy")
    with pytest.raises(kef.ConfigError, match="bootstrap_draws"):
        kef.ksdagg(model, X_test, bootstrap_draws=100)          # 1/101 > 0.05 / 10
    with pytest.raises(kef.DataError):
        kef.ksdagg(model, X_test[:1].copy())


def test_docstrings_are_bound():
    for function in (kef.mmdagg, kef.hsicagg, kef.ksdagg, kef.ksdagg_scores):
        doc = function.__doc__ or ""
        assert "Parameters" in doc and "Returns" in doc and "Examples" in doc, function
        assert function.__name__ in kef.__all__


def test_ksdagg_scores_is_ksdagg_on_the_models_score(model, data):
    """Score values given directly run the same test as the model's own: the same report, draw for draw,
    but for the model's name."""
    _, X_test = data
    options = {"number_bandwidths": 4, "seed": 4, **DRAWS}
    want = kef.ksdagg(model, X_test, **options)
    got = kef.ksdagg_scores(X_test, model.score(X_test), **options)
    assert got["model"] == ""
    got["model"] = want["model"]
    assert got == want
    # Other scores, another test: the score of N(0, I) instead of the model's.
    other = kef.ksdagg_scores(X_test, -X_test, **options)
    assert [t["statistic"] for t in other["aggregate"]["single_tests"]] != \
        [t["statistic"] for t in want["aggregate"]["single_tests"]]


def test_ksdagg_scores_bad_input(data):
    _, X_test = data
    S = -X_test
    with pytest.raises(kef.DataError, match=r"scores: 10 x 2, expected X's shape"):
        kef.ksdagg_scores(X_test, S[:10].copy())
    with pytest.raises(kef.DataError, match=r"scores: .* x 1, expected X's shape"):
        kef.ksdagg_scores(X_test, S[:, :1].copy())
    bad = S.copy()
    bad[3, 1] = np.nan
    with pytest.raises(kef.DataError, match="scores"):
        kef.ksdagg_scores(X_test, bad)
    with pytest.raises(kef.ConfigError, match="bootstrap_draws"):
        kef.ksdagg_scores(X_test, S, bootstrap_draws=100)
    with pytest.raises(TypeError, match="scores"):
        kef.ksdagg_scores(X_test, S.astype(np.float32))


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_plot_is_the_commands_figure(kef_exe, samples, tmp_path):
    """plot= draws the report with the command's --plot: the same bytes for the same options and seed,
    and the report names the file as the command's --json does."""
    d, a = samples
    options = {"number_bandwidths": 5, **DRAWS}
    mine = tmp_path / "mmdagg.png"
    got = kef.mmdagg(a["x"], a["y"], seed=7, plot=mine, **options)
    assert got["plot"] == str(mine)
    theirs = tmp_path / "command.png"
    report = json.loads(run_kef(kef_exe, "test", "two-sample", str(d / "x.npy"), str(d / "y.npy"), "--aggregate",
                                "--json", "--seed", "7", "--plot", str(theirs), *flags(options)).stdout)
    assert report["plot"] == str(theirs)
    assert mine.read_bytes() == theirs.read_bytes()
    # HSICAgg: a panel per bandwidth of Y (5 of them, in rows of 3), taller than MMDAgg's one row.
    hsic = tmp_path / "hsicagg.png"
    kef.hsicagg(a["x"], a["z"], seed=3, plot=str(hsic), **DRAWS)
    assert png_size(hsic)[1] > png_size(mine)[1]


def test_ksdagg_plot(model, data, tmp_path):
    _, X_test = data
    path = tmp_path / "ksdagg.png"
    r = kef.ksdagg(model, X_test, number_bandwidths=4, seed=2, plot=path, **DRAWS)
    assert r["plot"] == str(path)
    assert png_size(path)[0] > 0


def test_plot_bad_path_writes_nothing(samples, tmp_path):
    _, a = samples
    with pytest.raises(kef.ConfigError, match=r"plot .*no/f\.png: directory .* does not exist"):
        kef.mmdagg(a["x"], a["y"], number_bandwidths=5, plot=tmp_path / "no" / "f.png", **DRAWS)
    with pytest.raises(kef.ConfigError, match="plot .*: is a directory"):
        kef.hsicagg(a["x"], a["z"], plot=tmp_path, **DRAWS)
    with pytest.raises(TypeError, match="plot: expected a path"):
        kef.mmdagg(a["x"], a["y"], number_bandwidths=5, plot=3, **DRAWS)
    assert list(tmp_path.iterdir()) == []
