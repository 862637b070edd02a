"""kef: kernel exponential family densities, from Python.

The same pipelines, components and key declarations as the ``kef`` command (see README.md, "Python"):

    model = kef.fit(X, estimator={"type": "lite", "inducing_points": 200},
                    kernel={"type": "gaussian", "sigma": 1.5},
                    base_measure={"type": "gaussian", "std": 4.0}, seed=1)
    model.log_density(X_test); model.score(X_test); model.sample(1000, seed=2)
    kef.fssd(model, X_test, seed=3)          # {"fssd2": ..., "fssd_pvalue": ...}
    model.save("my-model"); kef.load("my-model")
    kef.run("pipeline.toml", set={"seed": 3})  # results.json as a dict

    kef.two_sample_test(X, Y, seed=1)        # MMD, as `kef test two-sample`; independence_test, witness
    kef.mmdagg(X, Y, seed=1)                 # MMDAgg, as `kef test two-sample --aggregate`; hsicagg
    kef.ksdagg(model, X_test, seed=3)        # KSDAgg of a model from its score
    kef.ksdagg_scores(X, S, seed=3)          # KSDAgg from score values S at the rows of X

Arrays are float64 NumPy arrays of shape (rows, columns), C or Fortran order, finite; anything else
raises TypeError (dtype) or kef.DataError naming the argument. kef's errors are raised as kef.Error's
subclasses (ConfigError, DataError, PluginError, ModelFileError, NumericalError, OutOfMemoryError)
carrying kef's message.
Progress goes to stderr; silence it per call (quiet=True) or for the module (kef.quiet = True).
"""

import builtins
import json
import math
import os
import sys

from . import _kef
from ._kef import (ConfigError, DataError, Error, Model, ModelFileError,
                   NumericalError, OutOfMemoryError, PluginError, causal_discovery, hsicagg,
                   independence_test, ksdagg, ksdagg_scores, mmdagg, two_sample_test, witness)

__version__ = _kef.__version__
# Shown as kef.ConfigError, kef.Model, ... (where users import them from), not kef._kef.
for _cls in (Error, ConfigError, DataError, PluginError, ModelFileError, NumericalError,
             OutOfMemoryError, Model):
    _cls.__module__ = __name__
del _cls
for _fn in (two_sample_test, independence_test, witness, causal_discovery, mmdagg, hsicagg, ksdagg,
            ksdagg_scores):
    try:
        _fn.__module__ = __name__
    except (AttributeError, TypeError):  # builtin functions may refuse it; help() still shows them
        pass
del _fn
__all__ = [
    "fit", "run", "validate", "load", "evaluate", "fssd", "ksd", "log_likelihood",
    "score_matching_loss", "mmd_two_sample", "mmd", "conditional_log_likelihood",
    "conditional_score_matching_loss",
    "two_sample_test", "independence_test", "witness", "causal_discovery", "mmdagg", "hsicagg",
    "ksdagg", "ksdagg_scores", "Model", "Error", "ConfigError", "DataError",
    "PluginError", "ModelFileError", "NumericalError", "OutOfMemoryError", "quiet",
]

#: Module-wide default of every call's ``quiet``: True silences kef's progress on stderr.
quiet = False


def _quiet(value):
    return quiet if value is None else bool(value)


# ---------------------------------------------------------------------------------------------------
# Python values as TOML text. The tables then go through kef's own parser and key declarations, so a
# misspelt key gets kef's "did you mean" message and a wrong type kef's "expected ..., got ...".

def _toml_key(key):
    if not isinstance(key, str):
        raise TypeError(f"key {key!r}: expected a string")
    if key and all(c.isalnum() or c in "_-" for c in key):
        return key
    return json.dumps(key)


def _toml_value(value, where):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (str, os.PathLike)):
        return json.dumps(os.fspath(value))  # a TOML basic string (JSON escapes are TOML escapes)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v, f'{where}.{k}')}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    # NumPy scalars (numpy.float64 is a float already; numpy.int64 is not an int).
    if hasattr(value, "item") and callable(value.item):
        return _toml_value(value.item(), where)
    raise TypeError(f"{where}: cannot be written as a TOML value (got {type(value).__name__})")


def _toml_table(header, table, where):
    if table is None:
        return ""
    if isinstance(table, str):
        table = {"type": table}
    if not isinstance(table, dict):
        raise TypeError(f"{where}: expected a dict (a TOML table), got {type(table).__name__}")
    lines = [f"[{header}]"] if header else []
    lines += [f"{_toml_key(k)} = {_toml_value(v, f'{where}.{k}')}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _overrides(settings):
    """`set={"a.b": v}` as `kef run --set a.b=v` strings."""
    if not settings:
        return []
    out = []
    for key, value in settings.items():
        text = value if isinstance(value, str) else _toml_value(value, f"set[{key!r}]")
        out.append(f"{key}={text}")
    return out


# ---------------------------------------------------------------------------------------------------
# Models

def load(directory, *, quiet=None):
    """Loads a saved model.

    Parameters
    ----------
    directory : str or os.PathLike
        A directory written by ``kef run`` (its ``models/NAME``), :meth:`Model.save` or kef 0.2.
    quiet : bool or None
        Silence plugin warnings (None: ``kef.quiet``).

    Returns
    -------
    kef.Model
        In data units, bitwise the model that was saved.

    Raises
    ------
    kef.ModelFileError
        The directory is not a readable saved model, or a component's plugin is not loaded.

    Examples
    --------
    >>> model = kef.load("runs/demo/models/lite")     # doctest: +SKIP
    """
    return _kef._load(os.fspath(directory), _quiet(quiet))


# ---------------------------------------------------------------------------------------------------
# Pipelines

def _comm_handle(comm):
    """An mpi4py communicator as the Fortran handle _kef takes (comm.py2f()), or -1 for none."""
    if comm is None:
        return -1
    if not hasattr(comm, "py2f") or not hasattr(comm, "Get_size"):
        raise TypeError(f"comm: expected an mpi4py communicator (e.g. mpi4py.MPI.COMM_WORLD), got "
                        f"{builtins.type(comm).__name__}")
    if not _kef._with_mpi:
        raise ConfigError("comm: this kef was built without MPI (KEF_WITH_MPI off or MPI not found), "
                          "so it cannot share a run between processes; call without comm=")
    return int(comm.py2f())


def _run_in_memory(toml, source, X, columns, settings, threads, quiet, write, output, from_file,
                   comm):
    results, models, table, log, out = _kef._run_in_memory(
        toml, source, X, list(columns or []), _overrides(settings), _kef._threads(threads), _quiet(quiet),
        bool(write), os.fspath(output) if output else "", from_file, _comm_handle(comm))
    return json.loads(results), dict(models)


def run(config, X=None, *, set=None, columns=None, write=None, output=None, threads=0, quiet=None,
        return_models=False, comm=None):
    """Runs a pipeline and returns its results.json as a dict.

    Parameters
    ----------
    config : str or os.PathLike
        A pipeline file.
    X : numpy.ndarray of float64, optional
        Rows replacing the pipeline's [data] source.
    set : dict, optional
        Overrides, as ``kef run --set``.
    columns, write, output, threads, quiet, return_models, comm
        See below.

    Returns
    -------
    dict, or (dict, {name: kef.Model}) with ``return_models=True``

    Raises
    ------
    kef.ConfigError, kef.DataError, kef.PluginError, kef.NumericalError

    Examples
    --------
    >>> results = kef.run("pipeline.toml", set={"seed": 3})   # doctest: +SKIP

    Notes
    -----
    config: a pipeline file's path. Without X this is `kef run FILE` (the output directory is written;
    `output` replaces [output] dir). With X (an N x D float64 array) the matrix replaces the [data]
    source (its host keys split, standardize, ... still apply); then nothing is written unless
    write=True. set: overrides as {"model.NAME.kernel.sigma": 2.0, ...} (`--set`). With
    return_models=True (in-memory runs only) returns (results, {name: Model}).
    comm: an mpi4py communicator (under `mpirun -np K python3 ...`): the K processes share the run's
    sums as `mpirun -np K kef run` does and every one returns the same results, bitwise those of one
    process; only rank 0 writes. Every process must make the same call (with X: the same matrix).
    """
    path = os.fspath(config)
    if X is None:
        if return_models:
            raise ConfigError("return_models: needs X (an in-memory run); load a file run's models "
                              "with kef.load(results['models'][NAME]['model_dir'])")
        if write is False:
            raise ConfigError("write=False: a pipeline file's run writes its output directory; give X "
                              "for a run in memory")
        text, out, table = _kef._run_file(path, _overrides(set), _kef._threads(threads), _quiet(quiet),
                                          os.fspath(output) if output else "", _comm_handle(comm))
        return json.loads(text)
    results, models = _run_in_memory("", path, X, columns, set, threads, quiet, bool(write), output,
                                     True, comm)
    return (results, models) if return_models else results


def validate(config, X=None, *, set=None, columns=None, quiet=None):
    """Every check kef.run(config, X, set=...) makes before its first fit, as ``kef validate``.

    Parameters
    ----------
    config : str or os.PathLike
    X : numpy.ndarray of float64, optional
    set : dict, optional
    columns : list of str, optional
    quiet : bool or None

    Returns
    -------
    None
        When every check passes.

    Raises
    ------
    kef.ConfigError, kef.DataError, kef.PluginError

    Examples
    --------
    >>> kef.validate("pipeline.toml")                      # doctest: +SKIP
    """
    _kef._validate(os.fspath(config), X, list(columns or []), _overrides(set), _quiet(quiet))


def fit(X, estimator, kernel=None, base_measure=None, *, validation=None, data=None, parts=None,
        seed=0, threads=0, quiet=None, columns=None, comm=None):
    """Fits one model to the rows of X and returns it.

    Parameters
    ----------
    X : numpy.ndarray of float64, shape (n_rows, dim)
    estimator : str or dict
        The [model.estimator] table ({"type": "lite", "inducing_points": 200, ...}).
    kernel, base_measure : str or dict, optional
        The [model.kernel] and [model.base_measure] tables.
    validation, data, parts, seed, threads, quiet, columns, comm
        See below.

    Returns
    -------
    kef.Model
        In data units.

    Raises
    ------
    kef.ConfigError
        An unknown or misspelt key (with kef's "did you mean"), a wrong type, ``threads=1.5``.
    kef.DataError, kef.NumericalError, kef.PluginError

    Examples
    --------
    >>> model = kef.fit(X, "lite", {"type": "gaussian", "sigma": "median"}, "gaussian")  # doctest: +SKIP

    Notes
    -----
    estimator, kernel, base_measure: the [model.estimator], [model.kernel] and [model.base_measure]
    tables as dicts ({"type": "lite", "inducing_points": 200, ...}; a string is {"type": string}).
    parts: other part tables of the model ({"feature_map": {...}, "sampler": {...}}).
    validation: rows of X held out as the validation split (a fraction in [0, 1) or a count), for
    estimators that use one. data: more [data] host keys ({"standardize": True}, ...).
    The same fit as `kef run` on a pipeline with these tables, X as its data file, no test split and
    the same seed: bitwise the same model. comm: an mpi4py communicator, as for kef.run (every process
    passes the same X and gets the same model).
    """
    data_table = dict(data or {})
    split = dict(data_table.pop("split", {}) or {})
    split.setdefault("test", 0)
    if validation is not None:
        split["validation"] = validation
    data_table["split"] = split
    text = f"seed = {_toml_value(_kef._seed(seed), 'seed')}\n"
    text += _toml_table("data", data_table, "data")
    text += '[[model]]\nname = "model"\n'
    text += _toml_table("model.estimator", estimator, "estimator")
    text += _toml_table("model.kernel", kernel, "kernel")
    text += _toml_table("model.base_measure", base_measure, "base_measure")
    for name, table in (parts or {}).items():
        text += _toml_table(f"model.{name}", table, f"parts[{name!r}]")
    _, models = _run_in_memory(text, "kef.fit", X, columns, None, threads, quiet, False, None, False,
                               comm)
    return models["model"]


# ---------------------------------------------------------------------------------------------------
# Evaluators

def evaluate(model, X, type, *, against=None, seed=0, threads=0, quiet=None, **keys):
    """Runs one evaluator on a model with held-out rows, as ``kef eval``.

    Parameters
    ----------
    model : kef.Model
    X : numpy.ndarray of float64
    type : str
        The evaluator ("fssd", "ksd", "log_likelihood", "score_matching_loss", "mmd_two_sample", ...).
    against : kef.Model, optional
    seed, threads, quiet
    **keys
        The evaluator's keys.

    Returns
    -------
    dict
        {metric: value}.

    Raises
    ------
    TypeError, kef.ConfigError, kef.DataError

    Examples
    --------
    >>> kef.evaluate(model, X_test, "fssd", seed=3)        # doctest: +SKIP

    Notes
    -----
    Runs the evaluator `type` (e.g. "fssd", "ksd", "log_likelihood", "score_matching_loss",
    "mmd_two_sample") on `model` with the rows of X (data units) as held-out data, as `kef eval` does
    on a saved model with the same seed; `keys` are the evaluator's keys (see `kef plugins --describe
    evaluator/TYPE`).
    against: the second model of comparative evaluators. Returns {metric: value}; metrics in
    model coordinates keep their names (see `kef eval`'s metric_spaces)."""
    if not isinstance(model, Model):
        raise TypeError(f"model: expected a kef.Model, got {builtins.type(model).__name__}")
    if against is not None and not isinstance(against, Model):
        raise TypeError(f"against: expected a kef.Model, got {builtins.type(against).__name__}")
    table = {"type": type}
    table.update(keys)
    metrics, _spaces, notes = _kef._evaluate(model, X, _toml_table("", table, "evaluator"), against,
                                             _kef._seed(seed), _kef._threads(threads), _quiet(quiet))
    if not _quiet(quiet):
        for note in notes:
            print(f"[kef] note: {note}", file=sys.stderr)
    return dict(metrics)


def _evaluator(name):
    def function(model, X, **keys):
        return evaluate(model, X, name, **keys)
    function.__name__ = name
    function.__doc__ = (f"The evaluator ``{name}``: kef.evaluate(model, X, \"{name}\", **keys).\n\n"
                        f"Parameters\n----------\nmodel : kef.Model\nX : numpy.ndarray of float64\n"
                        f"**keys\n    The evaluator's keys (``kef plugins --describe evaluator/{name}``), "
                        f"seed, threads, quiet.\n\nReturns\n-------\ndict\n    {{metric: value}}.\n\n"
                        f"Raises\n------\nkef.ConfigError, kef.DataError\n\nExamples\n--------\n"
                        f">>> kef.{name}(model, X_test)   # doctest: +SKIP\n")
    return function


fssd = _evaluator("fssd")
ksd = _evaluator("ksd")
log_likelihood = _evaluator("log_likelihood")
score_matching_loss = _evaluator("score_matching_loss")
mmd_two_sample = _evaluator("mmd_two_sample")
# The former evaluator `mmd`, kept for one release with its metric names (mmd2, mmd_pvalue); kef warns
# once that it is deprecated and names mmd_two_sample.
mmd = _evaluator("mmd")
conditional_log_likelihood = _evaluator("conditional_log_likelihood")
conditional_score_matching_loss = _evaluator("conditional_score_matching_loss")
