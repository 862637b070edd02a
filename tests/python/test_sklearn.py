"""kef.sklearn.KernelExpFamily in scikit-learn's model selection."""
import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold

import kef
from kef.sklearn import KernelExpFamily


def test_params_round_trip():
    est = KernelExpFamily(sigma=0.5, lambda_alpha=1e-2, inducing_points=20)
    params = est.get_params()
    assert params["sigma"] == 0.5 and params["lambda_alpha"] == 1e-2
    est.set_params(sigma=2.0)
    assert est.sigma == 2.0 and clone(est).get_params() == est.get_params()


def test_score_is_minus_the_score_matching_loss(data):
    X, X_test = data
    est = KernelExpFamily(sigma=1.2, inducing_points=30, base_measure_std=3.0, random_state=4).fit(X)
    model = kef.fit(X, estimator={"type": "lite", "lambda_alpha": 1e-3, "inducing_points": 30},
                    kernel={"type": "gaussian", "sigma": 1.2},
                    base_measure={"type": "gaussian", "std": 3.0}, seed=4, quiet=True)
    np.testing.assert_array_equal(est.score_samples(X_test), model.log_density(X_test))
    loss = kef.score_matching_loss(model, X_test, seed=4, quiet=True)["score_matching_loss"]
    assert est.score(X_test) == -loss
    draws = est.sample(10, random_state=1)
    assert draws.shape == (10, 2) and np.all(np.isfinite(draws))


def test_grid_search_over_two_sigmas(data):
    X, _ = data
    search = GridSearchCV(KernelExpFamily(inducing_points=20, base_measure_std=3.0, random_state=0),
                          {"sigma": [0.05, 1.5]}, cv=KFold(2, shuffle=True, random_state=0),
                          error_score="raise")
    search.fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and scores[0] != scores[1]
    assert search.best_params_["sigma"] == [0.05, 1.5][int(np.argmax(scores))]
    # A bandwidth far below the data's spacing overfits: held-out score matching prefers 1.5.
    assert search.best_params_["sigma"] == 1.5
    assert search.best_estimator_.model_.dim == 2


def test_log_likelihood_scoring_is_the_evaluators_value(data):
    X, X_test = data
    fast = {"samples": 20000}
    est = KernelExpFamily(sigma=1.2, inducing_points=30, base_measure_std=3.0, random_state=4,
                          scoring="log_likelihood", scoring_options=fast).fit(X)
    want = kef.log_likelihood(est.model_, X_test, seed=4, quiet=True, samples=20000)["log_likelihood"]
    assert np.isfinite(want) and est.score(X_test) == want
    # A bandwidth far below the data's spacing puts mass on the training points only: lower held-out
    # log-likelihood, as with score matching.
    narrow = KernelExpFamily(sigma=0.05, inducing_points=30, base_measure_std=3.0, random_state=4,
                             scoring="log_likelihood", scoring_options=fast).fit(X)
    assert narrow.score(X_test) < est.score(X_test)
