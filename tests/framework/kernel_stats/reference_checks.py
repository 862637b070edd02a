"""What the twin tests against the aggregated tests' reference implementations share: loading a
reference module from a checkout that is never part of kef, and comparing two rejection counts that
come from different random draws."""
import importlib.util
import math
import os

# ctest reports this exit status as a skipped test (SKIP_RETURN_CODE): no reference checkout was given.
SKIP = 77


def load_module(checkout, relative_path, name):
    """The module at checkout/relative_path (a reference's np.py), imported under `name`."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(checkout, relative_path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rates_agree(label, kef_count, ref_count, trials):
    """0 when the two rejection rates over `trials` trials differ by at most 3 sd of the difference of
    two independent binomials at the pooled rate (the rate's variance floored at 1/trials, so that rates
    of 0 or 1 do not demand equality), else 1; prints both."""
    p = (ref_count + kef_count) / (2 * trials)
    sd = math.sqrt(max(p * (1 - p), 1.0 / trials) * 2 / trials)
    diff = abs(ref_count - kef_count) / trials
    print(f"{label}rejection rate over {trials} trials: kef {kef_count / trials:.3f}, reference "
          f"{ref_count / trials:.3f} (difference {diff:.3f}, 3 sd = {3 * sd:.3f})")
    return 0 if diff <= 3 * sd else 1
