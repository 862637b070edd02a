"""kef's errors as Python exceptions with kef's messages; bad arrays refused, naming the argument."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import kef
from conftest import BASE, KERNEL, LITE


@pytest.fixture(scope="module")
def model(data):
    X, _ = data
    return kef.fit(X, estimator=LITE, kernel=KERNEL, base_measure=BASE, seed=1, quiet=True)


def test_exception_hierarchy():
    for cls in (kef.ConfigError, kef.DataError, kef.PluginError, kef.ModelFileError,
                kef.NumericalError, kef.OutOfMemoryError):
        assert issubclass(cls, kef.Error) and cls is not kef.Error
    assert issubclass(kef.Error, Exception)
    assert issubclass(kef.OutOfMemoryError, MemoryError)
    assert "MemoryError" in kef.OutOfMemoryError.__doc__


def test_out_of_memory_is_its_own_class(tmp_path):
    """An allocation that fails (here 16 TB of synthetic rows, the memory estimate waved through by
    memory_limit_gb) is kef.OutOfMemoryError, also a MemoryError, naming the step and the size it
    asked for (10^12 rows x 2 columns of doubles); nothing is written. The child process's address
    space is capped, so the allocation fails at once."""
    cfg = tmp_path / "p.toml"
    cfg.write_text('schema_version = 1\nseed = 1\nmemory_limit_gb = 1e9\n\n[data]\n'
                   'type = "synthetic/banana"\nn = 1000000000000\n\n[[model]]\nname = "m"\n'
                   '[model.estimator]\ntype = "gaussian_fit"\n')
    code = ("import resource, sys, kef\n"
            "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
            "try:\n"
            "    kef.run(sys.argv[1], output=sys.argv[2], quiet=True)\n"
            "except kef.OutOfMemoryError as e:\n"
            "    assert isinstance(e, MemoryError) and isinstance(e, kef.Error)\n"
            "    print('OutOfMemoryError:', e)\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", code, str(cfg), str(out)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OutOfMemoryError:") and "synthetic/banana" in r.stdout, r.stdout
    assert "an allocation of 16 TB failed" in r.stdout, r.stdout
    assert not out.exists()


def test_a_failed_allocation_outside_a_step_is_out_of_memory_with_its_size(tmp_path):
    """An allocation that fails inside a library call with no step of its own (MMDAgg's n x n and
    2n x 2n matrices, 0.5 and 2 GB at n = 8000, in a process capped at 1.5 GB of address space) is
    still kef.OutOfMemoryError naming the size it asked for, not a bare MemoryError. Which of the
    matrices fails first depends on what the interpreter already holds, so the size is matched as a
    pattern."""
    code = ("import resource, numpy as np, kef\n"
            "X = np.random.default_rng(1).normal(size=(8000, 1))\n"
            "resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))\n"
            "try:\n"
            "    kef.mmdagg(X, X + 1.0)\n"
            "except kef.OutOfMemoryError as e:\n"
            "    print('OutOfMemoryError:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert re.match(r"OutOfMemoryError: kef: an allocation of [0-9.]+ [MG]B failed", r.stdout), r.stdout


def test_typo_key_says_did_you_mean(data):
    X, _ = data
    with pytest.raises(kef.ConfigError, match="did you mean") as e:
        kef.fit(X, estimator={"type": "lite", "inducing_point": 30}, kernel=KERNEL, base_measure=BASE,
                quiet=True)
    assert "inducing_points" in str(e.value)
    # The message names the call and the key, not a line and column of the TOML text kef.fit wrote.
    assert str(e.value).startswith("kef.fit: model[0].estimator.inducing_point: unknown key"), str(e.value)
    with pytest.raises(kef.ConfigError, match="did you mean"):
        kef.fit(X, estimator=LITE, kernel={"type": "gaussian", "sigmaa": 1.0}, quiet=True)


def test_evaluator_keys_are_checked(model, data):
    _, X_test = data
    with pytest.raises(kef.ConfigError, match="did you mean"):
        kef.fssd(model, X_test, null_draw=100, quiet=True)
    with pytest.raises(kef.ConfigError, match="fsd"):
        kef.evaluate(model, X_test, "fsd", quiet=True)
    with pytest.raises(kef.ConfigError, match="compares two models: give against=MODEL"):
        kef.evaluate(model, X_test, "relative_fssd", quiet=True)
    with pytest.raises(kef.ConfigError, match="against: evaluator fssd takes one model"):
        kef.fssd(model, X_test, against=model, quiet=True)


def test_wrong_value_type_is_a_config_error(data):
    X, _ = data
    with pytest.raises(kef.ConfigError, match="inducing_points"):
        kef.fit(X, estimator={"type": "lite", "inducing_points": "many"}, kernel=KERNEL,
                base_measure=BASE, quiet=True)


def test_wrong_dtype_names_the_argument(model, data):
    X, X_test = data
    with pytest.raises(TypeError, match=r"^X: expected dtype float64, got int64"):
        model.log_density(X_test.astype(np.int64))
    with pytest.raises(TypeError, match=r"^X: expected dtype float64, got float32"):
        kef.fit(X.astype(np.float32), estimator=LITE, kernel=KERNEL, quiet=True)
    with pytest.raises(TypeError, match=r"^X: expected a numpy.ndarray"):
        model.score(X_test.tolist())


def test_non_contiguous_names_the_argument(model, data):
    X, X_test = data
    wide = np.ascontiguousarray(np.repeat(X_test, 2, axis=1))
    view = wide[:, ::2]
    assert not view.flags.c_contiguous and not view.flags.f_contiguous
    with pytest.raises(kef.DataError, match=r"^X: not contiguous"):
        model.log_density(view)
    with pytest.raises(kef.DataError, match=r"^X: not contiguous"):
        kef.fit(np.repeat(X, 2, axis=1)[:, ::2], estimator=LITE, kernel=KERNEL, quiet=True)


def test_non_finite_names_the_argument_row_and_column(model, data):
    X, X_test = data
    bad = X_test.copy()
    bad[3, 1] = np.nan
    with pytest.raises(kef.DataError, match=r"^X: row 3, column 1 is nan"):
        model.log_density(bad)
    bad = X.copy()
    bad[17, 0] = np.inf
    with pytest.raises(kef.DataError, match=r"^X: row 17, column 0 is inf"):
        kef.fit(bad, estimator=LITE, kernel=KERNEL, quiet=True)
    with pytest.raises(kef.DataError, match=r"^X: row 3, column 1"):
        bad = X_test.copy()
        bad[3, 1] = -np.inf
        kef.fssd(model, bad, quiet=True)


def test_wrong_dimension_names_the_argument(model, data):
    _, X_test = data
    three = np.ones((5, 3))
    with pytest.raises(kef.DataError, match=r"^X: has 3 columns, .* has dimension 2"):
        model.log_density(three)
    with pytest.raises(kef.DataError, match=r"^X: has 3 columns"):
        model.score(three)
    with pytest.raises(kef.DataError, match=r"^X: has 3 columns"):
        kef.ksd(model, three, quiet=True)
    with pytest.raises(kef.DataError, match=r"^X: expected a 2-D array"):
        model.log_density(X_test[:, 0])


def test_missing_model_directory(tmp_path):
    with pytest.raises(kef.Error, match="nowhere"):
        kef.load(tmp_path / "nowhere")


def test_no_normaliser_is_a_config_error(model, data):
    _, X_test = data
    assert model.log_normalizer is None
    with pytest.raises(kef.ConfigError, match="normalized=True"):
        model.log_density(X_test, normalized=True)


def test_sample_count(model):
    with pytest.raises(kef.ConfigError, match="^n: expected a positive number"):
        model.sample(0)


def test_no_permission_warning_for_the_working_directory(tmp_path, kef_exe):
    """The built-in components have no file; a world-writable working directory (like /tmp) was
    reported as a world-writable plugin directory by `kef plugins` and by the module's first load."""
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    r = subprocess.run([kef_exe, "plugins"], cwd=open_dir, capture_output=True, text=True)
    assert r.returncode == 0 and "writable by every user" not in r.stderr, r.stderr
    code = "import kef; kef.load('nowhere')"
    r = subprocess.run([sys.executable, "-c", code], cwd=open_dir, capture_output=True, text=True)
    assert "kef.ModelFileError" in r.stderr or "ModelFileError" in r.stderr, r.stderr
    assert "writable by every user" not in r.stderr, r.stderr


def test_validate_checks_before_fitting(tmp_path, data):
    from conftest import PIPELINE
    X, _ = data
    np.save(tmp_path / "data.npy", X)
    cfg = tmp_path / "p.toml"
    cfg.write_text(PIPELINE.format(seed=1, path="data.npy", test=20, evaluate=""))
    assert kef.validate(cfg) is None
    assert kef.validate(cfg, X) is None
    with pytest.raises(kef.ConfigError, match="did you mean"):
        kef.validate(cfg, X, set={"model.model.kernel.sigmaa": 1.0})
    with pytest.raises(kef.DataError, match=r"^X: row 0, column 0 is nan"):
        kef.validate(cfg, np.full((5, 2), np.nan))


def test_gil_released_during_fit():
    """Another Python thread keeps running while kef fits: with the GIL held, the main loop below
    would stall for the whole fit."""
    import threading
    import time
    X = np.random.default_rng(0).normal(size=(8000, 2))
    took = {}

    def work():
        t = time.perf_counter()
        kef.fit(X, estimator={"type": "lite", "inducing_points": 200}, kernel=KERNEL, base_measure=BASE,
                quiet=True, threads=1)
        took["fit"] = time.perf_counter() - t

    thread = threading.Thread(target=work)
    stamps = [time.perf_counter()]
    thread.start()
    while thread.is_alive():
        stamps.append(time.perf_counter())
    thread.join()
    assert took["fit"] > 0.05, "the fit is too short to tell"
    assert np.diff(stamps).max() < 0.5 * took["fit"], (np.diff(stamps).max(), took["fit"])


def test_comparative_and_sample_based_evaluators(model, data):
    """mmd draws from the model (HMC for a lite model); relative_fssd takes the second model as
    against=, which must be a kef.Model."""
    X, X_test = data
    m = kef.mmd(model, X_test, samples=200, permutations=20, hmc_warmup=100, hmc_init="base_measure", seed=3, quiet=True)
    assert np.isfinite(m["mmd2"]) and 0.0 < m["mmd_pvalue"] <= 1.0
    other = kef.fit(X, estimator={"type": "lite", "inducing_points": 30, "lambda_alpha": 1e-3},
                    kernel={"type": "gaussian", "sigma": 0.3}, base_measure=BASE, quiet=True)
    r = kef.evaluate(model, X_test, "relative_fssd", against=other, J=5, seed=3, quiet=True)
    assert any(np.isfinite(v) for v in r.values()), r
    with pytest.raises(TypeError, match="against"):
        kef.evaluate(model, X_test, "relative_fssd", against="model", quiet=True)
