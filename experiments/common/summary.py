"""Reading the runs' results and writing mean ± sd cells, shared by the experiments' analysis modules.

The analysis modules run as scripts (``python3 experiments/<study>/analysis.py ...``); they import
this module as ``common.summary`` after putting ``experiments/`` on ``sys.path``.
"""
import json
import math
import statistics

# The first paragraph of a table written by a --quick run.
QUICK_NOTE = "**Quick mode (smoke test): a few training steps only; these numbers are not results.**"


def load_json(path):
    """The JSON document at path (a run's results.json)."""
    with open(path) as f:
        return json.load(f)


def mean_sd(xs):
    """The mean and the sample standard deviation (divisor n − 1) of xs; the sd of one value is 0."""
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return mean, sd


def sd_decimals(sd):
    """The decimal places that show a positive, finite sd to two significant digits."""
    return max(0, 1 - math.floor(math.log10(sd)))


def two_digit_spread(mean, sd):
    """"mean ± sd", the sd to two significant digits and the mean to the same decimal place."""
    decimals = sd_decimals(sd)
    return f"{mean:.{decimals}f} ± {sd:.{decimals}f}"


def read_timings(path):
    """The rows of a timings.tsv file (tab-separated fields, empty lines skipped)."""
    with open(path) as f:
        return [line.split("\t") for line in f.read().split("\n") if line]
