"""Conditional models p(y | x) from Python: kef.fit with [data] targets, Model.sample(n, given=X)
bitwise `kef sample MODEL_DIR --given X` with the same seed, and the refusals."""
import numpy as np
import pytest

import kef
from conftest import run_kef

EPS_KDE = {"type": "eps_kde", "epsilon": 0.3, "bandwidth": 0.25}


@pytest.fixture(scope="module")
def rows():
    """y = 5 + 2 sin(x) + (0.3 + 0.2 |x|) noise, the target first (column order is the data's)."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, size=300)
    y = 5 + 2 * np.sin(x) + (0.3 + 0.2 * np.abs(x)) * rng.normal(size=300)
    return np.column_stack([y, x])


def fit(rows):
    return kef.fit(rows, EPS_KDE, columns=["y", "x"], data={"targets": ["y"], "standardize": True},
                   quiet=True)


def test_conditional_fit_and_sampling_equal_the_command(tmp_path, kef_exe, rows):
    model = fit(rows)
    assert model.conditional
    assert "targets y [y]" in model.column_roles
    given = np.array([[-2.0], [0.0], [1.5]])
    draws = model.sample(4000, seed=9, given=given)
    assert draws.shape == (3 * 4000, 2)
    # x where the data had its inputs (column 1), repeated exactly; y drawn per row.
    assert np.array_equal(draws[:, 1], np.repeat(given[:, 0], 4000))
    for i, x in enumerate(given[:, 0]):
        y = draws[i * 4000:(i + 1) * 4000, 0]
        # ε-KDE's conditional mean is near the truth's 5 + 2 sin(x) (its own smoothing aside).
        assert abs(y.mean() - (5 + 2 * np.sin(x))) < 0.35, (x, y.mean())

    # The same draws as `kef sample --given` on the saved model, with the same seed.
    model.save(tmp_path / "m")
    np.save(tmp_path / "x.npy", given)
    run_kef(kef_exe, "sample", str(tmp_path / "m"), "--given", str(tmp_path / "x.npy"), "-n", "4000",
            "--seed", "9", "--out", str(tmp_path / "draws.npy"), "--quiet")
    assert np.array_equal(np.load(tmp_path / "draws.npy"), draws)
    # A C-order and a Fortran-order `given` are the same inputs.
    assert np.array_equal(model.sample(50, seed=2, given=np.asfortranarray(given)),
                          model.sample(50, seed=2, given=given))


def test_conditional_log_density_score_and_evaluators_equal_the_command(tmp_path, kef_exe, rows):
    """log_density and score take whole rows (y, x) and give log p(y | x) and d/dy log p(y | x),
    bitwise `kef score` on the saved model; the conditional evaluators run on the model."""
    model = fit(rows)
    lp = model.log_density(rows, normalized=True)
    s = model.score(rows)
    assert lp.shape == (300,) and s.shape == (300, 1)
    # eps-KDE is normalised exactly: normalized=True subtracts log Z(x) = 0.
    assert np.array_equal(lp, model.log_density(rows))
    model.save(tmp_path / "m")
    np.save(tmp_path / "rows.npy", rows)
    run_kef(kef_exe, "score", str(tmp_path / "m"), "--data", str(tmp_path / "rows.npy"), "--normalize",
            "--out", str(tmp_path / "scored.npy"), "--quiet")
    scored = np.load(tmp_path / "scored.npy")
    assert np.array_equal(scored[:, 0], lp)
    assert np.array_equal(scored[:, 1:], s)
    # The score against central differences of the log density in y (data units).
    h = 1e-5
    up, down = rows.copy(), rows.copy()
    up[:, 0] += h
    down[:, 0] -= h
    fd = (model.log_density(up) - model.log_density(down)) / (2 * h)
    assert np.allclose(s[:, 0], fd, rtol=1e-5, atol=1e-6)
    # Its density integrates to 1 over y in data units (the Jacobian of the standardisation included).
    grid = np.linspace(-15, 25, 8001)
    for x in (-2.0, 0.5):
        pairs = np.column_stack([grid, np.full_like(grid, x)])
        assert abs(np.trapz(np.exp(model.log_density(pairs)), grid) - 1) < 1e-6
    ll = kef.conditional_log_likelihood(model, rows, quiet=True)
    assert ll["conditional_log_likelihood"] == pytest.approx(lp.mean(), rel=1e-12)
    sm = kef.conditional_score_matching_loss(model, rows, quiet=True)
    assert np.isfinite(sm["conditional_score_matching_loss"])
    with pytest.raises(kef.ConfigError, match=r"has no Laplacian"):
        kef.score_matching_loss(model, rows, quiet=True)


def test_conditional_refusals(rows):
    model = fit(rows)
    with pytest.raises(kef.ConfigError, match=r"conditional density p\(y \| x\).*given=X"):
        model.sample(10)
    with pytest.raises(kef.DataError, match=r"^given: has 2 columns.*takes its 1 input columns x"):
        model.sample(10, given=np.zeros((2, 2)))
    with pytest.raises(kef.DataError, match=r"^given: row 1, column 0 is nan"):
        model.sample(10, given=np.array([[0.0], [np.nan]]))
    with pytest.raises(kef.ConfigError, match=r"^n 0: expected a positive number"):
        model.sample(0, given=np.zeros((2, 1)))
    with pytest.raises(kef.DataError, match=r"X"):
        model.log_density(rows[:, :1])
    plain = kef.fit(rows, {"type": "gaussian_fit"}, quiet=True)
    assert not plain.conditional
    with pytest.raises(kef.ConfigError, match=r"not a conditional density p\(y \| x\); drop given"):
        plain.sample(10, given=np.zeros((2, 1)))
