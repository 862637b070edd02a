"""A scikit-learn estimator over kef.fit, so that model selection (GridSearchCV, cross_val_score)
tunes a kernel exponential family's bandwidth and regularisation on held-out data:

    from sklearn.model_selection import GridSearchCV
    from kef.sklearn import KernelExpFamily
    search = GridSearchCV(KernelExpFamily(inducing_points=100),
                          {"sigma": [0.5, 1.0, 2.0], "lambda_alpha": [1e-4, 1e-2]}, cv=3)
    search.fit(X)

score(X) is minus the score-matching loss on X (higher is better; scoring="score_matching", the
default), or the mean log-likelihood (scoring="log_likelihood": the `log_likelihood` evaluator, which
needs a normaliser: known, or estimated by the evaluator's importance sampling).
"""

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin

import kef


class KernelExpFamily(DensityMixin, BaseEstimator):
    """A kernel exponential family density fitted by kef.

    estimator: the estimator type ("lite", "nystrom", ...); sigma: the Gaussian kernel's bandwidth
    (kernel="gaussian") or the named kernel's `sigma`; lambda_alpha: the ridge penalty λ_α;
    inducing_points: M (estimators that take it; None leaves the key out); base_measure_std: the
    Gaussian base measure's standard deviation (None: no base measure table, the estimator's default);
    estimator_options, kernel_options, base_measure_options: further keys of those tables;
    scoring: "score_matching" or "log_likelihood"; scoring_options: keys of that evaluator (e.g.
    {"samples": 20000} for log_likelihood's importance sampling); random_state: kef's seed (an int;
    None is 0);
    threads: worker threads (results do not depend on them); quiet: silence progress.
    """

    def __init__(self, estimator="lite", sigma=1.0, lambda_alpha=1e-3, inducing_points=100,
                 kernel="gaussian", base_measure_std=None, estimator_options=None,
                 kernel_options=None, base_measure_options=None, scoring="score_matching",
                 scoring_options=None, random_state=None, threads=0, quiet=True):
        self.estimator = estimator
        self.sigma = sigma
        self.lambda_alpha = lambda_alpha
        self.inducing_points = inducing_points
        self.kernel = kernel
        self.base_measure_std = base_measure_std
        self.estimator_options = estimator_options
        self.kernel_options = kernel_options
        self.base_measure_options = base_measure_options
        self.scoring = scoring
        self.scoring_options = scoring_options
        self.random_state = random_state
        self.threads = threads
        self.quiet = quiet

    def _seed(self):
        if self.random_state is None:
            return 0
        if isinstance(self.random_state, (int, np.integer)):
            return int(self.random_state)
        raise TypeError("random_state: expected an int (kef's seed) or None, got "
                        f"{type(self.random_state).__name__}")

    def _tables(self):
        estimator = {"type": self.estimator, "lambda_alpha": float(self.lambda_alpha)}
        if self.inducing_points is not None:
            estimator["inducing_points"] = int(self.inducing_points)
        estimator.update(self.estimator_options or {})
        kernel = {"type": self.kernel, "sigma": float(self.sigma)}
        kernel.update(self.kernel_options or {})
        base = None
        if self.base_measure_std is not None or self.base_measure_options:
            base = {"type": "gaussian"}
            if self.base_measure_std is not None:
                base["std"] = float(self.base_measure_std)
            base.update(self.base_measure_options or {})
        return estimator, kernel, base

    def fit(self, X, y=None):
        if self.scoring not in ("score_matching", "log_likelihood"):
            raise kef.ConfigError(f"scoring: expected score_matching or log_likelihood, got {self.scoring!r}")
        estimator, kernel, base = self._tables()
        self.model_ = kef.fit(X, estimator=estimator, kernel=kernel, base_measure=base,
                              seed=self._seed(), threads=self.threads, quiet=self.quiet)
        self.n_features_in_ = self.model_.dim
        return self

    def _model(self):
        model = getattr(self, "model_", None)
        if model is None:
            from sklearn.exceptions import NotFittedError
            raise NotFittedError("KernelExpFamily: call fit(X) first")
        return model

    def score_samples(self, X):
        """log p~(x) per row of X (unnormalised: kef's models rarely know log Z)."""
        return self._model().log_density(X)

    def score(self, X, y=None):
        model = self._model()
        if self.scoring == "log_likelihood":
            metrics = kef.log_likelihood(model, X, seed=self._seed(), threads=self.threads,
                                         quiet=self.quiet, **(self.scoring_options or {}))
            return metrics["log_likelihood"]
        metrics = kef.score_matching_loss(model, X, seed=self._seed(), threads=self.threads,
                                          quiet=self.quiet, **(self.scoring_options or {}))
        return -metrics["score_matching_loss"]

    def sample(self, n_samples=1, random_state=None):
        seed = self._seed() if random_state is None else int(random_state)
        return self._model().sample(n_samples, seed=seed, threads=self.threads, quiet=self.quiet)
