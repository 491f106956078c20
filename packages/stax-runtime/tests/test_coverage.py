"""The coverage table: every case agrees with eager NumPy, and docs/coverage.md is current."""

import copy
from pathlib import Path

import numpy as np
import pytest

from stax.runtime import coverage

TABLE = Path(__file__).resolve().parents[3] / "docs" / "coverage.md"


_COMPILED_FUNCTION = coverage.CompiledFunction


class _CalledTwice:
    """``CompiledFunction`` for the coverage module's measurements: each call is made twice, the
    compiling call (on copies of the arguments) and then the cached version's, whose result is
    the one measured; the two must agree bit for bit (or raise alike)."""

    def __init__(self, fn, **options):
        self.compiled = _COMPILED_FUNCTION(fn, **options)
        self.once = options.get("device") == "cuda"  # tensors: _copy_args copies no tensor

    def __call__(self, *args):
        if self.once:
            return self.compiled(*args)
        try:
            first = self.compiled(*(coverage.layout_copy(a) if isinstance(a, np.ndarray) else
                                    copy.deepcopy(a) if isinstance(a, np.random.Generator)
                                    else a for a in args))  # a generator: its own state
        except Exception as exc:
            with pytest.raises(type(exc)):
                self.compiled(*args)
            raise
        later = self.compiled(*args)
        if not coverage._agree(later, first, True):
            raise AssertionError(f"the cached version's call gave {later!r}, the compiling "
                                 f"call's {first!r}")
        return later

    def __getattr__(self, name):
        return getattr(self.compiled, name)


@pytest.fixture
def cached_calls(monkeypatch):
    """The coverage cases measured on the cached version's call, not only the compiling one's."""
    monkeypatch.setattr(coverage, "CompiledFunction", _CalledTwice)


def test_every_case_agrees_with_numpy_and_the_table_is_current(cached_calls):
    """With torch and Triton installed (CI), the CUDA column too: each case on the CUDA path in
    Triton's interpreter (conftest.py sets TRITON_INTERPRET=1) against NumPy. The table is
    compared only where it can be made whole (the CUDA column needs both)."""
    cuda = coverage.cuda_available()
    rows = [coverage.measure(c, cuda) for c in coverage.cases()]
    wrong = [r for r in rows if not r.agrees or not r.cuda_agrees]
    assert not wrong, wrong
    # every gradient Stax gives agrees with finite differences (coverage_gradients.py)
    assert not [r for r in rows if r.gradient == "NO"]
    assert {r.gradient for r in rows} <= set(coverage.GRADIENT_STATUSES)
    assert {r.status for r in rows} <= {"native", "extern", "fallback", "n/a"}
    assert {r.cuda for r in rows} <= (set(coverage.CUDA_STATUSES) if cuda else {""})
    text = coverage.table(rows)
    if cuda and TABLE.exists() and f"NumPy {np.__version__}." in TABLE.read_text():
        assert TABLE.read_text() == text, "regenerate: python -m stax.runtime.coverage > docs/coverage.md"


def test_the_cuda_column_runs_the_cases_through_the_cuda_path():
    pytest.importorskip("torch")
    if not coverage.cuda_available():
        pytest.skip("Triton was imported before TRITON_INTERPRET=1 was set")
    by_name = {c.name: c for c in coverage.cases()}
    rows = {name: coverage.measure(by_name[name], cuda=True)
            for name in ("x.sum(axis=-1)", "np.matmul", "np.exp", "x[idx] (array index)")}
    assert rows["x.sum(axis=-1)"].cuda == "native" and rows["np.exp"].cuda == "native"
    assert rows["np.matmul"].cuda == "NumPy step" and rows["np.matmul"].cuda_detail == "numpy.matmul"
    assert all(r.cuda_agrees for r in rows.values()), rows
    table = coverage.table(list(rows.values()))
    assert "| group | case | runs as | agrees | CUDA | gradient | detail |" in table
    assert "| linear algebra | `np.matmul` | extern | yes | NumPy step | yes | numpy.matmul |" in table


def test_the_required_surface_is_captured():
    rows = {r.name: r for r in (coverage.measure(c) for c in coverage.cases())}
    for name in ("x.sum(axis=-1)", "np.where(c, x, y)", "x.astype(np.float32)", "np.matmul",
                 "np.einsum", "x[[0, 2]]", "np.ones(shape)", "np.concatenate", "np.split",
                 "np.divmod", "np.add.reduce"):
        assert rows[name].status in ("native", "extern"), rows[name]


@pytest.mark.parametrize("variant", sorted(coverage.VARIANTS))
def test_every_case_agrees_on_other_layouts_dtypes_and_special_values(variant, cached_calls):
    failures = []
    for case in coverage.cases(seed=3):
        agrees, what = coverage.run_variant(case, variant)
        if not agrees:
            failures.append(f"{case.name}: {what}")
    assert not failures, failures
