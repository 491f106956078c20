"""Arrays the function makes itself (``out = np.zeros(...)`` then filled) are traced values
(issue 13): every update of them is captured functionally, and a C function's own ``np.empty``
still gets a real array."""

import numpy as np
import pytest
from numpy import empty as imported_empty

from stax.ir import run_program
from stax.trace import trace

X = np.linspace(-2.0, 3.0, 6)


def filled_by_columns(x):
    out = np.zeros((x.shape[0], 3))
    out[:, 0] = x
    out[:, 1] = x * 2
    out[:, 2] = 1.0
    return out


def filled_by_elements(x):
    out = np.empty(len(x))
    for i in range(len(x)):
        out[i] = x[i] * 2.0 + 1
    return out


def updated_in_place(x):
    b = np.zeros(x.shape[0])
    b[0] = 5
    b += x
    b[1:3] *= -1.0
    return b


def ones_full_and_arange(x):
    acc = np.ones_like(x) if False else np.ones(x.shape)
    acc[::2] = np.full(3, 7.0)
    return acc * np.arange(x.size) + x


def nested_expressions(x):
    return np.zeros(x.shape).reshape(2, 3)[1] + x[:3]


@pytest.mark.parametrize("fn", [filled_by_columns, filled_by_elements, updated_in_place,
                                ones_full_and_arange, nested_expressions])
def test_local_arrays_are_traced_and_replay_like_eager(fn):
    capture = trace(fn, (X,))
    targets = [n.target for n in capture.graph.nodes]
    assert any(t.startswith("numpy.") for t in targets), targets
    other = np.random.default_rng(1).standard_normal(X.shape)  # the capture is not a constant
    np.testing.assert_array_equal(run_program(capture, (other,), {}), fn(other))


def test_empty_is_recorded_as_zeros():
    capture = trace(lambda x: np.empty(3) * 0 + x[:3], (X,))
    assert "numpy.zeros" in [n.target for n in capture.graph.nodes]


def test_a_local_array_is_recorded_when_made_even_if_unused():
    capture = trace(lambda x: (np.zeros(3), x + 1)[1], (X,))
    assert [n.target for n in capture.graph.nodes][1] == "numpy.zeros"


def test_c_code_calling_creation_functions_gets_real_arrays():
    """PCG64's seeding (Cython) calls np.empty itself: no frame of its own, so the user's frame
    is the nearest; its current call is PCG64, not np.empty."""
    capture = trace(lambda x: x * np.random.Generator(np.random.PCG64(3)).random(), (X,))
    expected = X * np.random.Generator(np.random.PCG64(3)).random()
    np.testing.assert_array_equal(run_program(capture, (X,), {}), expected)


def test_numpys_own_python_code_gets_real_arrays():
    capture = trace(lambda x: np.pad(x, 2) + np.kron(np.eye(2), np.ones(2)).sum(), (X,))
    np.testing.assert_array_equal(run_program(capture, (X,), {}),
                                  np.pad(X, 2) + np.kron(np.eye(2), np.ones(2)).sum())


def uses_a_from_import(x):
    out = imported_empty((2, x.shape[0]))
    out[0] = x
    out[1] = -x
    return out


def test_from_imports_of_creation_functions_are_traced_and_put_back():
    capture = trace(uses_a_from_import, (X,))
    assert "numpy.zeros" in [n.target for n in capture.graph.nodes]
    np.testing.assert_array_equal(run_program(capture, (X + 1,), {}), uses_a_from_import(X + 1))
    assert globals()["imported_empty"] is getattr(np.empty, "__stax_original__", np.empty)


def reads_local_values_in_python(x):
    steps = np.arange(1, 4) * 2
    total = 0.0
    for s in steps:  # Python iterates a value that follows from the key: no data gate
        total += float(s)
    if np.zeros(2).sum() == 0 and int(steps.max()) == 6:
        return x * total
    return x


def test_python_reads_of_values_computed_from_local_arrays_alone_are_not_gates():
    capture = trace(reads_local_values_in_python, (X,))
    assert capture.gates == []
    np.testing.assert_array_equal(run_program(capture, (X + 1,), {}), (X + 1) * 12.0)


def test_python_reads_of_values_that_depend_on_arguments_stay_gates():
    capture = trace(lambda x: x * 2 if (np.zeros(6) + x).sum() > 0 else x, (X,))
    assert len(capture.gates) == 1


@pytest.mark.parametrize("fn", [
    lambda x: np.array([x[0] * 2, x[1] - x[2], 3.0]),
    lambda x: np.array([[x[0], 1.0], [2, x[1]]]),
    lambda x: np.array((x.sum(), x.max()), dtype=np.float32),
    lambda x: np.asarray([x[0], np.float32(2)]),
    lambda x: np.array([[1.0, 2.0], [x[3], x[4]]]) * x[:2],
    lambda x: np.array([x[:2], x[2:4] * 2]),
])
def test_an_array_of_traced_values_is_a_stack_with_numpys_dtype(fn):
    capture = trace(fn, (X,))
    assert "numpy.stack" in [n.target for n in capture.graph.nodes]
    other = np.random.default_rng(2).standard_normal(X.shape)
    got, want = run_program(capture, (other,), {}), fn(other)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_empty_like_of_a_traced_array_is_recorded_as_zeros_like():
    def running_mean(x):
        out = np.empty_like(x)
        acc = 0.0
        for i in range(x.shape[0]):
            acc = acc + x[i]
            out[i] = acc / (i + 1)
        return out
    capture = trace(running_mean, (X,))
    targets = [n.target for n in capture.graph.nodes]
    assert "numpy.zeros_like" in targets and "numpy.empty_like" not in targets
    np.testing.assert_allclose(run_program(capture, (X * 2,), {}), running_mean(X * 2))
