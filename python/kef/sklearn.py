"""scikit-learn estimators over kef.fit: one class per density estimator kef registers.

Every unconditional estimator type (``kef plugins`` lists them; plugins add more) is a class here,
named from its type in CamelCase: ``lite`` is :class:`Lite`, ``maf`` :class:`Maf`, ``eps_kde``
:class:`EpsKde`. ``estimators`` maps each type to its class. A class's parameters are the
estimator's own keys, read from kef's declarations (``kef plugins --describe estimator/TYPE``); a
key left at None is not sent, so kef's declared default applies. Estimators that use a kernel also
take ``kernel`` (a type or a table) and ``sigma`` (the kernel's bandwidth, a number, ``"median"``
or ``"bkl"``), and those that use a base measure ``base_measure``. What is not given gets the
defaults kef chooses for a fit without a pipeline (a Gaussian kernel with the median heuristic, a
Gaussian base measure, inducing points at most the training rows, a validation split for
estimators that early-stop on one, one component for ``Gmm``, one cluster of ``gaussian_fit`` for
``ClusterMixture``, ``Dkef``'s minibatches at most half the training rows, ``Nystrom``'s ``pinv``
solver, which fits near-duplicate rows: ``kef/fit_defaults.hpp``), and rows are standardised by
default, so that every class fits any data scikit-learn's checks give it:

    from sklearn.model_selection import GridSearchCV
    from kef.sklearn import Lite
    search = GridSearchCV(Lite(), {"sigma": [0.5, 1.0, 2.0], "lambda_alpha": [1e-4, 1e-2]}, cv=3)
    search.fit(X)

``score(X)`` is the mean log-likelihood of X for models whose normaliser is exact (the likelihood
baselines: Gaussian, mixtures, flows, ...), as scikit-learn's density estimators report it; for
unnormalised models (kernel exponential families) it is minus the score-matching loss on X, which
needs no normaliser and is exact and fast inside a cross-validation loop (higher is better in both).
``scoring="log_likelihood"`` asks for the estimated log-likelihood instead (the ``log_likelihood``
evaluator's importance sampling), ``scoring="score_matching"`` for the loss on any model that has
it. ``score_samples(X)`` is the log density per row: normalised where exact, unnormalised otherwise.
"""

import inspect
import keyword
import re

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils.validation import check_is_fitted

import kef
from kef import _kef

__all__ = ["KefDensity", "estimators"]

# Parameters every class takes besides its estimator's keys.
_COMMON = ("standardize", "validation", "parts", "scoring", "scoring_options", "random_state",
           "threads", "quiet")


def _seed(random_state):
    """kef's seed from scikit-learn's random_state: None is 0 (kef's runs are reproducible by
    default), an int is the seed, a RandomState or Generator draws one."""
    if random_state is None:
        return 0
    if isinstance(random_state, (bool, np.bool_)):
        raise ValueError(f"random_state: expected None, an int, a RandomState or a Generator, got "
                         f"{random_state!r}")
    if isinstance(random_state, (int, np.integer)):
        if random_state < 0:
            raise ValueError(f"random_state: expected a non-negative int, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int64).max))
    raise ValueError(f"random_state: expected None, an int, a RandomState or a Generator, got "
                     f"{type(random_state).__name__}")


def _table(value, where):
    """A part given as a type name or a table (dict), as a new dict."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"type": value}
    if isinstance(value, dict):
        return dict(value)
    raise ValueError(f"{where}: expected a type name or a dict (a TOML table), got "
                     f"{type(value).__name__}")


class KefDensity(DensityMixin, BaseEstimator):
    """Base class of kef's scikit-learn estimators (one subclass per estimator type).

    Subclasses are generated from kef's declarations when kef.sklearn is imported; see the module's
    documentation and each class's parameters.
    """

    _kef_type = None       # the estimator type
    _kef_keys = ()         # (parameter, key) of the estimator's declared keys
    _kef_kernel = False    # uses a kernel: takes kernel, sigma
    _kef_base = False      # uses a base measure: takes base_measure
    _kef_normalized = False  # its models know log Z exactly

    # -- tables -------------------------------------------------------------------------------------

    def _tables(self, rows):
        estimator = {"type": self._kef_type}
        for param, key in self._kef_keys:
            value = getattr(self, param)
            if value is not None:
                estimator[key] = value
        given = []
        kernel = base = None
        if self._kef_kernel:
            kernel = _table(self.kernel, "kernel")
            if kernel is not None:
                given.append("kernel")
        if self._kef_base:
            base = _table(self.base_measure, "base_measure")
            if base is not None:
                given.append("base_measure")
        if self.validation is not None:
            given.append("validation")
        tables = {"estimator": estimator, "kernel": kernel, "base_measure": base, "data": None}
        for table, key, value in _kef._fit_defaults(self._kef_type, given,
                                                    [k for k in estimator if k != "type"], rows):
            # "estimator.inner": a table nested in the estimator's (its absent `inner`).
            name, _, nested = table.partition(".")
            if tables[name] is None:
                tables[name] = {}
            target = tables[name].setdefault(nested, {}) if nested else tables[name]
            target.setdefault(key, value)
        if self._kef_kernel and self.sigma is not None:
            if tables["kernel"] is None:
                raise ValueError(f"sigma: {self._kef_type}'s kernel is optional; give kernel= "
                                 "(a type or a table) with it")
            tables["kernel"]["sigma"] = self.sigma
        return tables

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, X, y=None):
        """Fits the density to the rows of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Anything scikit-learn's check_array takes (lists, float32, int, DataFrames, read-only
            or strided arrays); converted once to a float64 array. Sparse input is refused.
        y : None
            Ignored (scikit-learn's API).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad data (empty, 1-D, NaN, one sample) or a bad parameter (kef.ConfigError and
            kef.DataError are ValueErrors, with kef's message naming the key or row).

        Examples
        --------
        >>> Lite(sigma=1.0).fit(X).score(X_test)        # doctest: +SKIP
        """
        X = self._validate_data(X, reset=True, dtype=np.float64, ensure_min_samples=2,
                                order="C")
        if self.scoring not in (None, "score_matching", "log_likelihood"):
            raise ValueError(f"scoring: expected None, 'score_matching' or 'log_likelihood', got "
                             f"{self.scoring!r}")
        rows = X.shape[0]
        if self.validation is not None and 0 < self.validation < 1:
            rows = int(rows - np.ceil(self.validation * rows))
        tables = self._tables(rows)
        data = {"standardize": bool(self.standardize)}
        validation = self.validation
        if validation is None and tables["data"]:
            validation = tables["data"]["validation"]
        self.model_ = kef.fit(X, estimator=tables["estimator"], kernel=tables["kernel"],
                              base_measure=tables["base_measure"], validation=validation,
                              data=data, parts=self.parts, seed=_seed(self.random_state),
                              threads=self.threads, quiet=self.quiet)
        self.n_samples_fit_ = X.shape[0]
        return self

    def _rows(self, X):
        check_is_fitted(self)
        return self._validate_data(X, reset=False, dtype=np.float64, order="C")

    def score_samples(self, X):
        """Log density of each row of X.

        Normalised (log p(x)) for models whose normaliser is exact, otherwise the unnormalised
        log p~(x), which ranks rows but is not comparable across models.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of shape (n_samples,)

        Examples
        --------
        >>> Lite().fit(X).score_samples(X[:3])          # doctest: +SKIP
        """
        X = self._rows(X)
        return self.model_.log_density(X, normalized=self._exact())

    def _exact(self):
        return self.model_.log_normalizer is not None and self._kef_normalized

    def _scoring(self):
        if self.scoring is not None:
            return self.scoring
        return "log_likelihood" if self._exact() else "score_matching"

    def score(self, X, y=None):
        """Goodness of fit on X (higher is better).

        The mean log-likelihood for models whose normaliser is exact; otherwise minus the
        score-matching loss on X (exact, needs no normaliser). ``scoring`` chooses explicitly:
        "log_likelihood" estimates it by importance sampling for unnormalised models.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float

        Examples
        --------
        >>> Lite().fit(X).score(X_test)                 # doctest: +SKIP
        """
        X = self._rows(X)
        options = dict(self.scoring_options or {})
        seed = _seed(self.random_state)
        if self._scoring() == "log_likelihood":
            if self._exact() and not options:
                return float(np.mean(self.model_.log_density(X, normalized=True)))
            metrics = kef.log_likelihood(self.model_, X, seed=seed, threads=self.threads,
                                         quiet=self.quiet, **options)
            return float(metrics["log_likelihood"])
        metrics = kef.score_matching_loss(self.model_, X, seed=seed, threads=self.threads,
                                          quiet=self.quiet, **options)
        return -float(metrics["score_matching_loss"])

    def sample(self, n_samples=1, random_state=None):
        """Draws from the fitted density (exact sampler, or HMC as ``kef sample``).

        Parameters
        ----------
        n_samples : int, default 1
        random_state : None, int, RandomState or Generator
            None: the estimator's random_state.

        Returns
        -------
        numpy.ndarray of shape (n_samples, n_features)

        Examples
        --------
        >>> Lite().fit(X).sample(100, random_state=1)   # doctest: +SKIP
        """
        check_is_fitted(self)
        seed = _seed(self.random_state if random_state is None else random_state)
        return self.model_.sample(n_samples, seed=seed, threads=self.threads, quiet=self.quiet)

    def _more_tags(self):
        return {"X_types": ["2darray"], "allow_nan": False, "requires_y": False,
                "non_deterministic": False}


def _class_name(estimator_type):
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", estimator_type)
                   if part)


def _param_name(key, taken):
    name = re.sub(r"[^0-9A-Za-z_]", "_", key)
    if not name.isidentifier() or keyword.iskeyword(name) or name in taken:
        name = "estimator_" + name
    return name


def _make_class(info):
    keys = []
    taken = set(_COMMON) | {"kernel", "sigma", "base_measure"}
    for spec in info["keys"]:
        if spec["name"] == "type":
            continue
        keys.append((_param_name(spec["name"], taken), spec["name"], spec))
    uses_kernel = info["uses_kernel"] or any(p["name"] == "kernel" for p in info["parts"])
    uses_base = info["uses_base_measure"] or any(p["name"] == "base_measure" for p in info["parts"])
    params = [(param, None) for param, _key, _spec in keys]
    if uses_kernel:
        params += [("kernel", None), ("sigma", None)]
    if uses_base:
        params += [("base_measure", None)]
    params += [("standardize", True), ("validation", None), ("parts", None), ("scoring", None),
               ("scoring_options", None), ("random_state", None), ("threads", 0), ("quiet", True)]
    names = [p for p, _ in params]

    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError(f"{type(self).__name__}: parameters are keywords only")
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown parameter(s) {', '.join(unknown)}; it "
                            f"takes {', '.join(names)}")
        for name, default in params:
            setattr(self, name, kwargs.get(name, default))

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d) for n, d in params])

    lines = [f"{info['summary'] or 'kef estimator ' + info['type']}",
             "",
             f"kef's estimator ``{info['type']}`` as a scikit-learn density estimator; its keys are "
             f"those of ``kef plugins --describe estimator/{info['type']}`` (None: kef's default).",
             "",
             "Parameters",
             "----------"]
    for param, key, spec in keys:
        default = "kef's default" if spec["default"] is None else repr(spec["default"])
        lines += [f"{param} : {spec['kind']}, default None ({default})",
                  f"    {spec['doc']}" + ("" if param == key else f" (key ``{key}``)")]
    if uses_kernel:
        lines += ["kernel : str or dict, default None",
                  "    The kernel's type or table (None: a Gaussian kernel).",
                  "sigma : float or str, default None",
                  "    The kernel's ``sigma``: a number, \"median\" (the median heuristic, the "
                  "default) or \"bkl\"."]
    if uses_base:
        lines += ["base_measure : str or dict, default None",
                  "    The base measure's type or table (None: a Gaussian base measure)."]
    lines += ["standardize : bool, default True",
              "    Fit on standardised columns (the model is still in data units).",
              "validation : float or int, default None",
              "    Rows held out as the validation split, for estimators that use one.",
              "parts : dict, default None",
              "    Other part tables of the model ({\"sampler\": {...}, ...}).",
              "scoring : {None, 'log_likelihood', 'score_matching'}, default None",
              "    What ``score`` reports; None: the log-likelihood where the normaliser is exact, "
              "minus the score-matching loss otherwise.",
              "scoring_options : dict, default None",
              "    Keys of the scoring evaluator.",
              "random_state : None, int, RandomState or Generator, default None",
              "    kef's seed (None: 0).",
              "threads : int, default 0",
              "    Worker threads (0: all cores); results do not depend on it.",
              "quiet : bool, default True",
              "    Silence kef's progress on stderr.",
              "",
              "Attributes",
              "----------",
              "model_ : kef.Model",
              "    The fitted model.",
              "n_features_in_ : int",
              "",
              "Examples",
              "--------",
              f">>> from kef.sklearn import {_class_name(info['type'])}",
              f">>> {_class_name(info['type'])}().fit(X).score(X_test)   # doctest: +SKIP"]
    namespace = {
        "__init__": __init__,
        "__doc__": "\n".join(lines),
        "__module__": __name__,
        "_kef_type": info["type"],
        "_kef_keys": tuple((param, key) for param, key, _spec in keys),
        "_kef_kernel": uses_kernel,
        "_kef_base": uses_base,
        "_kef_normalized": info["normalized"],
    }
    name = _class_name(info["type"])
    cls = type(name, (KefDensity,), namespace)
    cls.__qualname__ = name
    return cls


def _unconditional(info):
    return not info["conditional"] or info["log_density"]


#: {estimator type: class}, for every unconditional estimator kef registers (plugins included).
estimators = {}
for _info in _kef._components("estimator"):
    if not _unconditional(_info):
        continue
    _cls = _make_class(_info)
    estimators[_info["type"]] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _info, _cls
