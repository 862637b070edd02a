"""Python against the kef command: the same seed gives bitwise the same fits, metrics, scores,
evaluations and samples; saved models round-trip through numpy.load and kef.load."""
import json
import os

import numpy as np

import kef
from conftest import BASE, KERNEL, LITE, PIPELINE, run_kef

EVALUATE = """
[[evaluate]]
type = "score_matching_loss"
[[evaluate]]
type = "fssd"
J = 5
"""


def write_pipeline(tmp_path, X, test, evaluate=""):
    np.save(tmp_path / "data.npy", X)
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text(PIPELINE.format(seed=11, path="data.npy", test=test, evaluate=evaluate))
    return cfg


def test_run_in_memory_and_file_equal_the_command(tmp_path, kef_exe, data):
    X, _ = data
    cfg = write_pipeline(tmp_path, X, test=60, evaluate=EVALUATE)
    run_kef(kef_exe, "run", str(cfg), "--output", str(tmp_path / "cli"), "--quiet", "--threads", "1")
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    metrics = cli["models"]["model"]["metrics"]
    assert set(metrics) >= {"score_matching_loss", "fssd2"}

    from_file = kef.run(cfg, output=tmp_path / "py", threads=1, quiet=True)
    assert from_file["models"]["model"]["metrics"] == metrics

    # The matrix in place of the [data] source, two threads: the same numbers to the last bit.
    in_memory, models = kef.run(cfg, X, threads=2, quiet=True, return_models=True)
    assert in_memory["models"]["model"]["metrics"] == metrics
    assert in_memory["models"]["model"]["model_dir"] is None
    assert set(models) == {"model"}

    # --set and set= are the same override.
    changed = kef.run(cfg, X, set={"model.model.kernel.sigma": 0.7}, quiet=True)
    run_kef(kef_exe, "run", str(cfg), "--output", str(tmp_path / "cli2"), "--quiet",
            "--set", "model.model.kernel.sigma=0.7")
    cli2 = json.loads((tmp_path / "cli2" / "results.json").read_text())
    assert changed["models"]["model"]["metrics"] == cli2["models"]["model"]["metrics"]
    assert changed["models"]["model"]["metrics"] != metrics


def test_fit_equals_the_commands_model(tmp_path, kef_exe, data):
    X, X_test = data
    cfg = write_pipeline(tmp_path, X, test=0)
    run_kef(kef_exe, "run", str(cfg), "--output", str(tmp_path / "cli"), "--quiet")
    saved_dir = tmp_path / "cli" / "models" / "model"

    model = kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=11, quiet=True)
    assert model.dim == 2 and model.type == "lite"
    saved = kef.load(saved_dir)
    log_p = model.log_density(X_test)
    assert log_p.shape == (X_test.shape[0],)
    np.testing.assert_array_equal(log_p, saved.log_density(X_test))
    np.testing.assert_array_equal(model.score(X_test), saved.score(X_test))

    # `kef score`: log p~ then the score, per row.
    np.save(tmp_path / "test.npy", X_test)
    run_kef(kef_exe, "score", str(saved_dir), "--data", str(tmp_path / "test.npy"),
            "--out", str(tmp_path / "score.npy"), "--quiet")
    scored = np.load(tmp_path / "score.npy")
    np.testing.assert_array_equal(scored[:, 0], log_p)
    np.testing.assert_array_equal(scored[:, 1:], model.score(X_test))

    # C and Fortran order are the same rows.
    np.testing.assert_array_equal(model.log_density(np.asfortranarray(X_test)), log_p)
    fortran_fit = kef.fit(np.asfortranarray(X), estimator=LITE, kernel=KERNEL, base_measure=BASE,
                          seed=11, quiet=True)
    np.testing.assert_array_equal(fortran_fit.log_density(X_test), log_p)
    # Another seed is another model (the inducing points are drawn from the seed's stream).
    other = kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=12, quiet=True)
    assert not np.array_equal(other.log_density(X_test), log_p)


def test_evaluators_equal_kef_eval(tmp_path, kef_exe, data):
    X, X_test = data
    model = kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=3, quiet=True)
    model.save(tmp_path / "m")
    np.save(tmp_path / "test.npy", X_test)
    for name, function, keys, cli_keys in [
            ("fssd", kef.fssd, {"J": 3}, ["--set", "J=3"]),
            ("ksd", kef.ksd, {}, []),
            ("score_matching_loss", kef.score_matching_loss, {}, [])]:
        out = tmp_path / f"{name}.json"
        run_kef(kef_exe, "eval", str(tmp_path / "m"), "--data", str(tmp_path / "test.npy"),
                "--type", name, "--seed", "5", "--out", str(out), "--quiet", *cli_keys)
        expected = json.loads(out.read_text())["metrics"]
        assert function(model, X_test, seed=5, quiet=True, **keys) == expected, name
        assert kef.evaluate(model, X_test, name, seed=5, quiet=True, **keys) == expected, name


def test_sample_equals_kef_sample(tmp_path, kef_exe, data):
    X, _ = data
    model = kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=3, quiet=True)
    model.save(tmp_path / "m")
    run_kef(kef_exe, "sample", str(tmp_path / "m"), "-n", "40", "--seed", "9", "--chains", "2",
            "--warmup", "60", "--out", str(tmp_path / "draws.npy"), "--quiet", "--max-rhat", "100",
            "--min-ess-fraction", "0")
    draws = model.sample(40, seed=9, chains=2, warmup=60, quiet=True)
    assert draws.shape == (40, 2)
    np.testing.assert_array_equal(draws, np.load(tmp_path / "draws.npy"))


def test_round_trip_through_numpy(tmp_path, data):
    """kef -> numpy.load -> kef: a saved model's arrays read with NumPy, the model reloaded with
    kef, the same values; the kef command's .npy outputs feed kef.Model methods directly."""
    X, X_test = data
    model = kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=4, quiet=True)
    model.save(tmp_path / "m")
    arrays = {p: np.load(tmp_path / "m" / p) for p in os.listdir(tmp_path / "m") if p.endswith(".npy")}
    assert arrays, "a saved lite model has .npy arrays"
    for name, a in arrays.items():
        assert a.dtype == np.float64 and np.all(np.isfinite(a)), name
    # The inducing points are training rows.
    points = [a for a in arrays.values() if a.ndim == 2 and a.shape == (30, 2)]
    assert points and all((p[:, None, :] == X[None, :, :]).all(-1).any(1).all() for p in points)
    reloaded = kef.load(tmp_path / "m")
    np.testing.assert_array_equal(reloaded.log_density(X_test), model.log_density(X_test))
    np.testing.assert_array_equal(reloaded.score(X_test), model.score(X_test))
    # Rows written with numpy.save and read back are the same rows to kef.
    np.save(tmp_path / "rows.npy", X_test)
    np.testing.assert_array_equal(reloaded.log_density(np.load(tmp_path / "rows.npy")),
                                  model.log_density(X_test))


def test_standardized_fit_is_in_data_units(tmp_path, kef_exe, data):
    """data={"standardize": True}: the model answers in data units, as `kef score` does."""
    X, X_test = data
    Xs = X * np.array([10.0, 0.1]) + 5.0
    model = kef.fit(Xs, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=2, quiet=True,
                    data={"standardize": True})
    assert model.preprocessing != "none"
    model.save(tmp_path / "m")
    Ts = X_test * np.array([10.0, 0.1]) + 5.0
    np.save(tmp_path / "t.npy", Ts)
    run_kef(kef_exe, "score", str(tmp_path / "m"), "--data", str(tmp_path / "t.npy"),
            "--out", str(tmp_path / "s.npy"), "--quiet")
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy")[:, 0], model.log_density(Ts))


def test_quiet_is_silent(capfd, data):
    X, X_test = data
    kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=1, quiet=True)
    old = kef.quiet
    kef.quiet = True
    try:
        model = kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=1)
        kef.fssd(model, X_test, seed=1, J=5)
    finally:
        kef.quiet = old
    assert capfd.readouterr().err == ""


def test_exact_sampler_and_normaliser_equal_the_command(tmp_path, kef_exe, data):
    """A model with an exact sampler and a known log Z (baselines' gaussian_fit): Model.sample uses
    the sampler as `kef sample` does, and normalized=True equals `kef score --normalize`."""
    X, X_test = data
    model = kef.fit(X, estimator={"type": "gaussian_fit"}, seed=5, quiet=True)
    assert model.can_sample and model.log_normalizer is not None
    model.save(tmp_path / "g")
    run_kef(kef_exe, "sample", str(tmp_path / "g"), "-n", "25", "--seed", "8",
            "--out", str(tmp_path / "draws.npy"), "--quiet")
    np.testing.assert_array_equal(model.sample(25, seed=8, quiet=True), np.load(tmp_path / "draws.npy"))
    np.save(tmp_path / "t.npy", X_test)
    run_kef(kef_exe, "score", str(tmp_path / "g"), "--data", str(tmp_path / "t.npy"), "--normalize",
            "--out", str(tmp_path / "s.npy"), "--quiet")
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy")[:, 0],
                                  model.log_density(X_test, normalized=True))


def test_in_memory_run_writes_when_asked(tmp_path, data):
    X, X_test = data
    cfg = write_pipeline(tmp_path, X, test=40, evaluate=EVALUATE)
    results, models = kef.run(cfg, X, write=True, output=tmp_path / "out", quiet=True,
                              return_models=True)
    on_disk = json.loads((tmp_path / "out" / "results.json").read_text())
    assert on_disk["models"]["model"]["metrics"] == results["models"]["model"]["metrics"]
    saved = kef.load(tmp_path / "out" / results["models"]["model"]["model_dir"])
    np.testing.assert_array_equal(saved.log_density(X_test), models["model"].log_density(X_test))


def test_fortran_order_is_read_in_place_and_blocks_are_the_commands(tmp_path, kef_exe, data):
    """A Fortran-order X is read in place by fits (no copy before kef's own splits), a C-order X is
    copied once: the same model either way. log_density and score evaluate X in the row blocks
    `kef score` uses, so on more rows than a block they give the command's bits, in either order, for
    a kernel model, a normalised baseline and a standardised fit (its data-units transform)."""
    X, _ = data
    block = kef._kef._row_block
    big = np.random.default_rng(1).normal(size=(block + 1001, 2))  # two blocks, the second odd-sized
    np.save(tmp_path / "big.npy", big)
    models = {
        "lite": kef.fit(X, LITE, KERNEL, BASE, seed=11, quiet=True),
        "gaussian": kef.fit(X, {"type": "gaussian_fit"}, quiet=True),
        "standardized": kef.fit(X, LITE, KERNEL, BASE, data={"standardize": True}, seed=11, quiet=True),
    }
    fortran = kef.fit(np.asfortranarray(X), LITE, KERNEL, BASE, seed=11, quiet=True)
    assert np.array_equal(fortran.log_density(big[:500]), models["lite"].log_density(big[:500]))
    assert np.array_equal(fortran.score(big[:500]), models["lite"].score(big[:500]))
    for name, m in models.items():
        m.save(tmp_path / name)
        run_kef(kef_exe, "score", str(tmp_path / name), "--data", str(tmp_path / "big.npy"),
                "--out", str(tmp_path / f"{name}.npy"), "--quiet")
        command = np.load(tmp_path / f"{name}.npy")
        for rows in (big, np.asfortranarray(big)):
            assert np.array_equal(m.log_density(rows), command[:, 0]), name
            assert np.array_equal(m.score(rows), command[:, 1:]), name
