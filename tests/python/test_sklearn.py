"""kef.sklearn: scikit-learn's own estimator checks over every estimator class, model selection
with worker processes, and the parameters as kef declares them."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import kef
import kef.sklearn
from conftest import BASE, KERNEL, LITE

# Training length only, for speed: the checks test the interface, so the iterative estimators train
# briefly. Everything else is each class's default (kef/fit_defaults.hpp), which must fit any data
# the checks give (tens of rows, near-duplicates, one feature).
FAST = {
    "dkef": {"max_steps": 5},
    "dde": {"iterations": 5},
    "made": {"max_epochs": 2},
    "made_mog": {"max_epochs": 2},
    "maf": {"max_epochs": 2},
    "maf_mog": {"max_epochs": 2},
    "real_nvp": {"max_epochs": 2},
}


def instances():
    out = []
    for estimator_type, cls in sorted(kef.sklearn.estimators.items()):
        params = {k: v for k, v in FAST.get(estimator_type, {}).items() if k in cls().get_params()}
        out.append(cls(**params))
    return out


@parametrize_with_checks(instances())
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_defaults_without_a_pipeline_fit_small_data():
    """The defaults kef/fit_defaults.hpp adds (what the checks above rely on), capped by the rows
    left to train on; a pipeline's declared defaults stay as they are."""
    def defaults(estimator_type, rows, given_keys=()):
        return {(t, k): v for t, k, v in kef._kef._fit_defaults(estimator_type, [], list(given_keys),
                                                                rows)}
    assert defaults("gmm", 20)[("estimator", "components")] == 1
    mixture = defaults("cluster_mixture", 20)
    assert mixture[("estimator", "clusters")] == 1
    assert mixture[("estimator.inner", "type")] == "gaussian_fit"
    assert ("estimator", "clusters") not in defaults("cluster_mixture", 20, ["clusters"])
    dkef = defaults("dkef", 20)   # 2 of 20 rows validate: 18 train
    assert dkef[("data", "validation")] == 0.1
    assert dkef[("estimator", "batch_fit")] == dkef[("estimator", "batch_loss")] == 9
    assert dkef[("estimator", "inducing_points")] == 18
    assert ("estimator", "batch_fit") not in defaults("dkef", 1000)   # 100 + 100 fit in 900
    assert defaults("nystrom", 20)[("estimator", "solver")] == "pinv"
    assert ("estimator", "solver") not in defaults("nystrom", 20, ["solver"])
    declared = {k["name"]: k["default"] for c in kef._kef._components("estimator")
                if c["type"] == "nystrom" for k in c["keys"]}
    assert declared["solver"] == "cholesky"


def test_every_unconditional_estimator_has_a_class():
    types = {c["type"] for c in kef._kef._components("estimator")
             if c["log_density"] or not c["conditional"]}
    assert set(kef.sklearn.estimators) == types
    assert {"lite", "nystrom", "maf", "gmm", "kde"} <= types
    for estimator_type, cls in kef.sklearn.estimators.items():
        assert getattr(kef.sklearn, cls.__name__) is cls
        assert cls._kef_type == estimator_type


def test_parameters_are_kefs_declarations():
    declared = {c["type"]: {k["name"] for k in c["keys"]} for c in kef._kef._components("estimator")}
    params = set(kef.sklearn.Lite().get_params())
    assert declared["lite"] <= params | {"type"}
    assert {"kernel", "sigma", "base_measure", "random_state"} <= params
    assert "lambda_alpha" not in kef.sklearn.Maf().get_params()
    assert "estimator_lambda" in kef.sklearn.Nystrom().get_params()   # `lambda`, a Python keyword
    with pytest.raises(TypeError, match="lambda_alpha"):
        kef.sklearn.Maf(lambda_alpha=1.0)


def test_lite_is_kef_fit_with_the_defaults(data):
    X, X_test = data
    est = kef.sklearn.Lite(sigma=1.2, inducing_points=30, base_measure=BASE, standardize=False,
                           random_state=4).fit(X)
    model = kef.fit(X, LITE, KERNEL, BASE, seed=4, quiet=True)
    np.testing.assert_array_equal(est.score_samples(X_test), model.log_density(X_test))
    loss = kef.score_matching_loss(model, X_test, seed=4, quiet=True)["score_matching_loss"]
    assert est.score(X_test) == -loss
    draws = est.sample(10, random_state=1)
    assert draws.shape == (10, 2) and np.all(np.isfinite(draws))


def test_normalised_models_score_the_mean_log_likelihood(data):
    X, X_test = data
    est = kef.sklearn.GaussianFit().fit(X)
    assert est.score(X_test) == np.mean(est.model_.log_density(X_test, normalized=True))
    np.testing.assert_array_equal(est.score_samples(X_test),
                                  est.model_.log_density(X_test, normalized=True))


@pytest.mark.parametrize("random_state", [None, 3, np.random.RandomState(3),
                                          np.random.default_rng(3)])
def test_random_state_forms(data, random_state):
    X, _ = data
    est = kef.sklearn.Lite(random_state=random_state).fit(X[:60])
    assert np.all(np.isfinite(est.score_samples(X[:5])))


def test_inputs_are_converted_once(data):
    X, X_test = data
    want = kef.sklearn.Lite().fit(X).score_samples(X_test)
    for form in (X.tolist(), np.asfortranarray(X)):
        np.testing.assert_array_equal(kef.sklearn.Lite().fit(form).score_samples(X_test), want)
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(kef.sklearn.Lite().fit(X32).score_samples(X_test),
                                  kef.sklearn.Lite().fit(X32.astype(np.float64)).score_samples(X_test))
    strided = np.repeat(X, 2, axis=0)[::2]
    np.testing.assert_array_equal(kef.sklearn.Lite().fit(strided).score_samples(X_test), want)
    with pytest.raises(ValueError):
        kef.sklearn.Lite().fit(X[:, 0])


def test_fitted_estimators_pickle_bitwise(data):
    X, X_test = data
    est = kef.sklearn.Lite(random_state=1).fit(X)
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.score_samples(X_test), est.score_samples(X_test))
    assert copy.get_params() == est.get_params()


@pytest.mark.parametrize("cls, grid", [
    ("Lite", {"sigma": [0.05, 1.5]}),
    ("Maf", {"learning_rate": [1e-3, 1e-2]}),
])
def test_grid_search_with_two_worker_processes(data, cls, grid):
    X, _ = data
    base = getattr(kef.sklearn, cls)(random_state=0, **FAST.get(cls.lower(), {}))
    search = GridSearchCV(base, grid, cv=KFold(2, shuffle=True, random_state=0), n_jobs=2,
                          error_score="raise")
    search.fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and scores[0] != scores[1]
    key = next(iter(grid))
    assert search.best_params_[key] == grid[key][int(np.argmax(scores))]
    # The same fits in this process give the same scores: workers change nothing.
    serial = GridSearchCV(clone(base), grid, cv=KFold(2, shuffle=True, random_state=0), n_jobs=1,
                          error_score="raise").fit(X)
    np.testing.assert_array_equal(serial.cv_results_["mean_test_score"], scores)
    if cls == "Lite":
        assert search.best_params_["sigma"] == 1.5   # far below the spacing overfits


def test_cross_val_score_with_two_worker_processes(data):
    X, _ = data
    scores = cross_val_score(kef.sklearn.Lite(random_state=0), X, cv=3, n_jobs=2)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
