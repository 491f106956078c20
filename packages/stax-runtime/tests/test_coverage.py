"""The coverage table: every case agrees with eager NumPy, and docs/coverage.md is current."""

from pathlib import Path

import numpy as np
import pytest

from stax.runtime import coverage

TABLE = Path(__file__).resolve().parents[3] / "docs" / "coverage.md"


def test_every_case_agrees_with_numpy_and_the_table_is_current():
    rows = [coverage.measure(c) for c in coverage.cases()]
    wrong = [r for r in rows if not r.agrees]
    assert not wrong, wrong
    assert {r.status for r in rows} <= {"native", "extern", "fallback", "n/a"}
    text = coverage.table(rows)
    if TABLE.exists() and f"NumPy {np.__version__}." in TABLE.read_text():
        assert TABLE.read_text() == text, "regenerate: python -m stax.runtime.coverage > docs/coverage.md"


def test_the_required_surface_is_captured():
    rows = {r.name: r for r in (coverage.measure(c) for c in coverage.cases())}
    for name in ("x.sum(axis=-1)", "np.where(c, x, y)", "x.astype(np.float32)", "np.matmul",
                 "np.einsum", "x[[0, 2]]", "np.ones(shape)", "np.concatenate", "np.split",
                 "np.divmod", "np.add.reduce"):
        assert rows[name].status in ("native", "extern"), rows[name]


@pytest.mark.parametrize("variant", sorted(coverage.VARIANTS))
def test_every_case_agrees_on_other_layouts_dtypes_and_special_values(variant):
    failures = []
    for case in coverage.cases(seed=3):
        agrees, what = coverage.run_variant(case, variant)
        if not agrees:
            failures.append(f"{case.name}: {what}")
    assert not failures, failures
