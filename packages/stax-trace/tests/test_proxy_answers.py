"""What Python sees of a traced value (issue 10 item 6): eager NumPy's answer, a data gate, or an
``UnsupportedError`` naming the construct and line — never another answer."""

import copy
import pickle

import numpy as np
import pytest

from stax.ir import UnsupportedError, run_program
from stax.trace import trace

X = np.arange(6.0).reshape(2, 3)


def same_as_eager(fn, *args):
    capture = trace(fn, args)
    got, want = run_program(capture, args, {}), fn(*args)
    for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple)
                    else (want,)):
        assert type(g) is type(w)
        np.testing.assert_array_equal(g, w)
    return capture


def test_isinstance_answers_for_the_value():
    seen = []

    def f(x):
        s = x.sum()
        seen.append((isinstance(x, np.ndarray), isinstance(s, np.floating), isinstance(s, float),
                     isinstance(x, np.generic), x.__class__))
        return x * 2.0 if isinstance(x, np.ndarray) else x * 3.0

    same_as_eager(f, X)  # traced, then eager
    assert seen == [(True, True, True, False, np.ndarray)] * 2


def test_isinstance_of_a_traced_generator():
    capture = trace(lambda x, g: x + (g.random(3) if isinstance(g, np.random.Generator) else 0.0),
                    (np.zeros(3), np.random.default_rng(0)))
    assert [n.target for n in capture.graph.nodes if n.meta.get("random")] == ["random"]


@pytest.mark.parametrize("fn, construct", [
    (lambda x: str(x.sum()), "str()"),
    (lambda x: repr(x), "repr()"),
    (lambda x: f"{x.sum():.2f}", "f-string"),
    (lambda x: "{}".format(x[0]), "f-string or format()"),  # noqa: UP032  (under test)
    (lambda x: "%s" % x.max(), "str()"),  # noqa: UP031
    (lambda x: print(x), "str()"),
    (lambda x: bytes(x), "bytes()"),
    (lambda x: pickle.dumps(x), "pickling"),
    (lambda x: {x.sum(): 1}, "hash()"),
], ids=["str", "repr", "f-string", "format", "percent", "print", "bytes", "pickle", "hash"])
def test_text_and_hashes_of_traced_values_are_refused_with_their_line(fn, construct):
    with pytest.raises(UnsupportedError, match="of a traced") as info:
        trace(fn, (X,))
    assert construct in str(info.value) and info.value.source.startswith(__file__)


def test_numeric_reads_are_gates():
    capture = trace(lambda x: x * float(x.sum()) + int(x.max()) + ("%d" % x.min() == "0"), (X,))  # noqa: UP031
    assert [g.kind for g in capture.gates] == ["float", "int", "int"]


def test_type_is_refused_before_capture_runs():
    ran = []

    def f(x):
        ran.append(1)
        return x * 2.0 if type(x) is np.ndarray else x * 3.0

    with pytest.raises(UnsupportedError, match=r"calls type\(\)") as info:
        trace(f, (X,))
    assert not ran and info.value.source.startswith(__file__)

    def helper(v):
        return type(v).__name__

    with pytest.raises(UnsupportedError, match=r"calls type\(\)"):
        trace(lambda x: x * len(helper(x)), (X,))
    trace(lambda x: x.astype(x.dtype.type), (X,))  # an attribute named type is no call of type


@pytest.mark.parametrize("fn", [
    lambda x: x * 2.0 if 3.0 in x else x,               # ndarray: (x == v).any()
    lambda x: divmod(x, 4.0),
    lambda x: divmod(7.0, x + 1.0),
    lambda x: x * round(x.sum() / 7.0, 2),
    lambda x: x + round(x.mean()),
    lambda x: copy.copy(x) + copy.deepcopy(x),
], ids=["in", "divmod", "rdivmod", "round-digits", "round-int", "copy"])
def test_python_protocols_answer_as_eager(fn):
    same_as_eager(fn, X)


def test_python_protocols_raise_eagers_errors():
    for fn, error in [(lambda x: round(x), TypeError), (lambda x: hash(x), TypeError)]:
        with pytest.raises(error):
            fn(X)
        with pytest.raises(error):
            trace(fn, (X,))


def test_an_escaped_proxy_says_so_when_used():
    kept = []
    with pytest.raises(UnsupportedError, match="closure 'kept'"):  # seen where it was left...
        trace(lambda x: (kept.append(x.sum()), kept.append(x * 2.0), x + 1.0)[2], (X,))
    scalar, array = kept  # ...and put back as the values eager NumPy stored there
    assert scalar == X.sum() and type(array) is np.ndarray
    np.testing.assert_array_equal(array, X * 2.0)
    hidden = []  # five containers down: not seen, and it refuses to be used
    trace(lambda x: (hidden.append([[[[(x.sum(), x * 2.0)]]]]), x + 1.0)[1], (X,))
    scalar, array = hidden[0][0][0][0][0]
    uses = [lambda v: v + 1, float, bool, lambda v: v.shape, lambda v: v.sum(), len, str, repr,
            np.exp, lambda v: np.asarray(v), lambda v: v[0], lambda v: list(v)]
    for value in (scalar, array):
        for use in uses:
            if use is len and value is scalar:
                continue
            with pytest.raises(UnsupportedError, match="escaped the compiled function"):
                use(value)
    with pytest.raises(UnsupportedError, match="escaped the compiled function"):
        trace(lambda x: x + hidden[0][0][0][0][0][1], (X,))  # met again by a later capture


def test_conversions_of_an_argument_are_identity_cast_or_copy():
    capture = same_as_eager(lambda x: np.asarray(x) + np.asanyarray(x, dtype=x.dtype), X)
    assert [n.target for n in capture.graph.nodes[1:-1]] == ["operator.add"]
    capture = same_as_eager(lambda x: np.asarray(x, dtype=np.float32), X)
    assert [n.target for n in capture.graph.nodes[1:-1]] == ["astype"]
    capture = same_as_eager(lambda x: np.ascontiguousarray(x.T), X)
    assert capture.graph.nodes[-2].tensor.strides == (2, 1)  # a C-order copy, as NumPy makes
    same_as_eager(lambda x: np.asfortranarray(x), X)
    same_as_eager(lambda x: np.array(x, dtype=np.int64), X)
    copied = same_as_eager(lambda x: np.array(x), X)
    assert copied.graph.nodes[-2].target == "numpy.copy"


def test_conversions_numpy_refuses_still_fail():
    with pytest.raises(ValueError):  # eager: a copy is needed but copy=False forbids it
        np.asarray(X, dtype=np.float32, copy=False)
    with pytest.raises(UnsupportedError, match="conversion of a traced array"):
        trace(lambda x: np.asarray(x, dtype=np.float32, copy=False), (X,))


def test_a_refusal_the_function_catches_still_fails_the_capture():
    def f(x):
        try:
            label = f"{x.sum():.1f}"
        except Exception:
            label = "?"  # a capture that went on would bake in this branch
        return x + len(label)

    with pytest.raises(UnsupportedError, match="f-string"):
        trace(f, (X,))

    def g(x):
        try:
            x.strides  # noqa: B018  (a read that may fail)
        except Exception:
            pass
        return x + 1.0

    with pytest.raises(UnsupportedError, match="strides"):
        trace(g, (X,))


HISTORY = []
LATEST = {}


def test_a_traced_value_stored_in_a_global_fails_the_capture_with_its_place():
    def append(x):
        HISTORY.append(x.sum())
        return x + 1.0

    def store(x):
        LATEST["x"] = x * 2.0
        return x

    for fn, where in [(append, "global 'HISTORY'[-1]"), (store, "global 'LATEST'['x']")]:
        with pytest.raises(UnsupportedError, match="escaped the compiled function") as info:
            trace(fn, (X,))
        assert where in str(info.value)
    kept = []
    with pytest.raises(UnsupportedError, match="closure 'kept'"):
        trace(lambda x: (kept.append(x), x)[1], (X,))


def test_byteswap_is_refused_as_what_it_is():
    """``x.byteswap()`` makes a copy (refused as such, not as an in-place update);
    ``inplace=True`` is an in-place update."""
    with pytest.raises(UnsupportedError, match=r"byteswap\(\) \(a copy"):
        trace(lambda x: x.byteswap(), (X,))
    with pytest.raises(UnsupportedError, match=r"in-place update method \.byteswap\(inplace"):
        trace(lambda x: x.byteswap(inplace=True), (X.copy(),))


def test_an_untraced_array_indexed_by_a_traced_one_is_named_as_such():
    """A user probe's finding: ``bits[s]`` of a lookup table written in the function was refused
    as a "conversion of a traced array" (NumPy's indexing asks the index for its data), which
    did not say what to change."""
    def lookup(s):
        bits = np.array([0, 1, 1, 0], dtype=np.uint8)
        return bits[s]
    with pytest.raises(UnsupportedError, match=r"not traced .* indexed by a traced array") as info:
        trace(lookup, (np.array([0, 3, 1]),))
    assert "test_proxy_answers.py" in str(info.value)
