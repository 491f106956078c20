"""Sizes and switches of the stress suite, read from the environment in this one place.

``STAX_STRESS_EXAMPLES``  programs per hypothesis test (CI default below; ``nox -s stress`` sets it
                          so that the suite runs at least 10,000 programs)
``STAX_STRESS_KNOWN``     the known-defect strategies to draw from: a comma list, ``all`` or ``none``
                          (default: those whose defect is fixed, ``FIXED`` below). Each strategy
                          draws programs that found a defect of issue 10; one that still fails is
                          off by default: turn it on to see the failure, and move it to ``FIXED``
                          once its fix lands
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: the strategies that found a defect, and what they exercise
KNOWN_DEFECTS = {
    # listed in issue 10
    "containers": "tuples, lists and dicts of arrays as arguments, in-process (item 1: segfault; "
                  "test_stress_containers.py runs them in subprocesses whatever this says)",
    "ids": "a new configuration object at every call (item 2: objects keyed by id())",
    "frozen": "scalars, objects and callables in globals, closure cells and attributes that change "
              "between calls (item 3: frozen at capture)",
    "errstate": "warnings and np.errstate modes compared with eager NumPy (item 7)",
    "threads_random": "threads drawing from np.random while others compile (item 5)",
    # found by this suite
    "late_binding": "compile() before the free variables are bound, as a decorator above the global "
                    "it reads: a free array bound later is frozen at capture",
    "dead_draws": "random draws whose values the program does not use: the compiled function drops "
                  "them, so its generator does not advance",
    "decline_draws": "random draws in calls that meet NaN/Inf or floating-point events the error "
                     "state heeds: the call runs again (precise kernels, or eagerly) after its draws "
                     "and draws twice",
    "attr_inplace": "in-place updates of an argument object's array attributes (cfg.w += ...): "
                    "applied twice on the call that compiles when its capture falls back",
    "scalar_types": "NumPy scalar results compared by type too: from a warm disk capture np.abs(s) "
                    "of a NumPy scalar argument (or float(x.max()) * np.True_) comes back as a Python "
                    "float, np.clip of a full reduction as a 0-d array (without it, the same value "
                    "of another scalar type passes)",
    "fmax_zero_sign": "np.fmax/np.fmin of 0.0 and -0.0 compared bit for bit: the zero comes back "
                      "with the other argument's sign",
    "dead_warnings": "with errstate: steps whose values the program does not use warn (or raise) "
                     "eagerly and are dropped compiled (without it, every value is returned)",
    "draw_order": "two random draws of different shapes from one generator: run in the other order",
    "clip_layout": "np.clip of a Fortran-order array, then a row of it padded, concatenated, stacked "
                   "or rolled: wrong values",
    "setitem_broadcast": "y[0] = v with v of more (leading length-1) dimensions than y[0]: wrong "
                         "values",
}
#: the strategies whose defect is fixed: on unless STAX_STRESS_KNOWN says otherwise
FIXED = frozenset(KNOWN_DEFECTS)


def _enabled(raw: str | None) -> frozenset[str]:
    if raw is None:
        return FIXED
    names = {s.strip() for s in raw.split(",") if s.strip()}
    unknown = names - set(KNOWN_DEFECTS) - {"all", "none"}
    if unknown:
        raise ValueError(f"STAX_STRESS_KNOWN: unknown {sorted(unknown)}; known: {sorted(KNOWN_DEFECTS)}")
    return frozenset(KNOWN_DEFECTS) if "all" in names else frozenset(names - {"none"})


ENABLED = _enabled(os.environ.get("STAX_STRESS_KNOWN"))
EXAMPLES = int(os.environ.get("STAX_STRESS_EXAMPLES", "300"))
#: the CI size draws the same programs at every run (a new failure is a change in Stax, not luck);
#: a size set in the environment explores (``nox -s stress``), as does STAX_STRESS_RANDOM=1
DERANDOMIZE = "STAX_STRESS_EXAMPLES" not in os.environ and os.environ.get("STAX_STRESS_RANDOM") != "1"


def enabled(defect: str) -> bool:
    assert defect in KNOWN_DEFECTS, defect
    return defect in ENABLED


def scaled(fraction: float, minimum: int = 1) -> int:
    """A test's example count as a fraction of the main one (subprocess trials cost more)."""
    return max(minimum, int(EXAMPLES * fraction))


def stress_settings(max_examples: int) -> settings:
    """Hypothesis settings of a stress test: no deadline (compiles take their time), no example
    database (a failure prints its program, ready to replay), derandomized at the CI size."""
    return settings(max_examples=max_examples, deadline=None, database=None,
                    derandomize=DERANDOMIZE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])
