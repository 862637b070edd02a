"""kef.Model: pickling and deep copies through the saved-model bytes, Model.save's publishing rule,
argument checks (threads), arrays whose dtype object crossed a process boundary, docstrings."""
import copy
import os
import pickle

import numpy as np
import pytest

import kef
from conftest import BASE, KERNEL, LITE


@pytest.fixture(scope="module")
def model(data):
    X, _ = data
    return kef.fit(X, LITE, KERNEL, BASE, seed=3, quiet=True)


def test_pickle_and_deepcopy_are_bitwise(model, data):
    _, X_test = data
    state = model.__getstate__()
    once = pickle.loads(pickle.dumps(model))
    for other in (once, copy.deepcopy(model), pickle.loads(pickle.dumps(once))):
        assert isinstance(other, kef.Model) and other.type == model.type
        np.testing.assert_array_equal(other.log_density(X_test), model.log_density(X_test))
        np.testing.assert_array_equal(other.score(X_test), model.score(X_test))
        assert other.__getstate__() == state          # the same files, byte for byte
    assert b"kef_version" in state[1]["model.toml"]


def test_unpickling_without_the_plugin_raises_plugin_error(model):
    version, files, name, what = model.__getstate__()
    toml = files["model.toml"].decode()
    kernel_origin = "interface = 'kernel', plugin = 'gaussian', type = 'gaussian' }"
    assert "[origins]" in toml and kernel_origin in toml and "[kernel]\nsigma = 1.2\ntype = 'gaussian'" in toml
    # A model whose type comes from a plugin this kef has not loaded (what pickle.loads does: a new
    # object, then __setstate__ with the pickled state).
    files = dict(files)
    files["model.toml"] = toml.replace(
        kernel_origin, "interface = 'kernel', plugin = 'missing_plugin', type = 'elsewhere' }").replace(
        "[kernel]\nsigma = 1.2\ntype = 'gaussian'", "[kernel]\nsigma = 1.2\ntype = 'elsewhere'").encode()
    with pytest.raises(kef.PluginError, match="missing_plugin"):
        kef.Model.__new__(kef.Model).__setstate__((version, files, name, what))


def test_save_publishes_as_kef_run_does(model, data, tmp_path):
    _, X_test = data
    target = tmp_path / "m"
    model.save(target)
    np.testing.assert_array_equal(kef.load(target).log_density(X_test), model.log_density(X_test))
    # A saved model is replaced as a whole (a file of the old one does not survive).
    (target / "stale.npy").write_bytes(b"old")
    other = kef.fit(data[0], LITE, {"type": "gaussian", "sigma": 2.0}, BASE, seed=3, quiet=True)
    other.save(target)
    assert not (target / "stale.npy").exists()
    np.testing.assert_array_equal(kef.load(target).log_density(X_test), other.log_density(X_test))
    # An empty directory is fine; nothing is left beside the target.
    (tmp_path / "empty").mkdir()
    model.save(tmp_path / "empty")
    assert sorted(os.listdir(tmp_path)) == ["empty", "m"]


def test_save_refuses_a_directory_that_is_not_a_saved_model(model, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "model.toml").write_text("# my own notes\nlearning_rate = 3\n")
    with pytest.raises(kef.ConfigError, match="not a saved kef model"):
        model.save(mine)
    assert (mine / "model.toml").read_text() == "# my own notes\nlearning_rate = 3\n"
    assert sorted(os.listdir(mine)) == ["model.toml"]
    assert sorted(os.listdir(tmp_path)) == ["mine"]          # no staging directory left
    (tmp_path / "file").write_text("x")
    with pytest.raises(kef.ConfigError, match="not a directory"):
        model.save(tmp_path / "file")


@pytest.mark.parametrize("threads", [1.5, True, "2", -1])
def test_threads_must_be_a_count(model, data, threads):
    X, X_test = data
    with pytest.raises(kef.ConfigError, match="threads"):
        kef.fit(X, LITE, KERNEL, BASE, threads=threads, quiet=True)
    with pytest.raises(kef.ConfigError, match="threads"):
        model.sample(5, threads=threads)
    with pytest.raises(kef.ConfigError, match="threads"):
        kef.score_matching_loss(model, X_test, threads=threads)


def test_threads_take_numpy_integers(model):
    assert model.sample(3, seed=1, threads=np.int64(1), quiet=True).shape == (3, 2)


def test_an_equal_dtype_object_is_float64(data):
    X, X_test = data
    crossed = pickle.loads(pickle.dumps(X))            # as joblib's workers receive it
    assert crossed.dtype is not np.dtype(np.float64) and crossed.dtype == np.float64
    a = kef.fit(crossed, LITE, KERNEL, BASE, seed=3, quiet=True)
    b = kef.fit(X, LITE, KERNEL, BASE, seed=3, quiet=True)
    np.testing.assert_array_equal(a.log_density(pickle.loads(pickle.dumps(X_test))),
                                  b.log_density(X_test))
    with pytest.raises(TypeError, match="float64"):
        kef.fit(X.astype(">f8"), LITE, KERNEL, BASE, quiet=True)   # the other byte order


def test_docstrings_are_bound(model):
    for method in (kef.Model.log_density, kef.Model.score, kef.Model.sample, kef.Model.save,
                   kef.two_sample_test, kef.independence_test, kef.witness, kef.fit, kef.load):
        doc = method.__doc__ or ""
        assert "Parameters" in doc and "Examples" in doc, method
    assert "kef.Model lite dim=2" in repr(model)
