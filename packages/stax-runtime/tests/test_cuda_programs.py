"""NumPy programs as ML and scientific users write them, compiled with ``device="cuda"`` and run on
torch CPU tensors in Triton's interpreter (conftest.py sets ``TRITON_INTERPRET=1`` before Triton is
imported), checked against NumPy on the same inputs: result kinds, dtypes, shapes, values (bit for
bit for exact operations, a few ulp for transcendental ones), updates of the arguments, exceptions,
and that each program runs natively, or falls back with one log line saying why (``strict_native``
raising that reason)."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import stax.runtime as stax  # noqa: E402
from stax.runtime import UnsupportedError, devices  # noqa: E402

pytestmark = [pytest.mark.skipif(not triton.knobs.runtime.interpret,
                                 reason="Triton was imported before TRITON_INTERPRET=1 was set"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

RNG = np.random.default_rng(12)


def special(shape, dtype=np.float64):
    """Normal values with NaN, +-Inf, -0.0 and 0.0 among them."""
    x = RNG.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[[0, 2, 3, 4, 5]] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    return x


X = special((5, 7))
X32 = special((5, 7), np.float32)
Y = RNG.standard_normal((5, 7))
Y32 = Y.astype(np.float32)
Y3 = RNG.standard_normal((4, 5, 6))
P = np.abs(RNG.standard_normal((5, 7))) * 10
I = RNG.integers(-20, 20, (5, 7))  # noqa: E741
J = np.array([3, -2, 1, 4, -5, 2, -1])


def tensorize(value):
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, (tuple, list)):
        return type(value)(tensorize(v) for v in value)
    if isinstance(value, dict):
        return {k: tensorize(v) for k, v in value.items()}
    return value


def leaves(value):
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in leaves(value[k])]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in leaves(v)]
    return [value]


def assert_same(got, want, ulp):
    """``got`` (torch) equals ``want`` (NumPy): dtype, shape, values; a zero's sign counts. With
    ``ulp``, floats may differ by that many units in the last place of NumPy's value."""
    assert isinstance(got, torch.Tensor), type(got)
    got, want = got.numpy(), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    if ulp is None or want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        if want.dtype.kind == "f":
            real = ~np.isnan(want)
            np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))
        return
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    close = np.abs(got.astype(np.float64) - want) <= ulp * np.spacing(np.abs(want)).astype(np.float64)
    assert (same | close).all(), (got[~(same | close)], want[~(same | close)])


def run_both(fn, args, ulp=None, compiled=None, **options):
    """fn on NumPy copies and compiled for CUDA (or ``compiled``) on tensor copies: same results,
    same updates of the arguments. Returns the compiled function."""
    np_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*np_args)
    cf = compiled or stax.compile(fn, device="cuda", **options)
    for _ in range(2):  # a (possibly) compiling call, then the cached version's
        t_args = tensorize(list(args))
        got = cf(*t_args)
        assert type(got) is type(want) or isinstance(got, torch.Tensor), (type(got), type(want))
        if isinstance(want, dict):
            assert sorted(got) == sorted(want)
        for g, w in zip(leaves(got), leaves(want), strict=True):
            if isinstance(w, (np.ndarray, np.generic)):
                assert_same(g, w, ulp)
            else:
                assert g == w and type(g) is type(w)
        for t, a in zip(t_args, np_args):
            if isinstance(a, np.ndarray):
                assert_same(t, a, None)  # side effects on the arguments
    return cf


def native(cf):
    return all(v.native and v.artifact.target["device"] == "cuda" for v in cf.versions())


# -- programs that must run natively, with NumPy's results ---------------------------------------

def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def logsumexp(x):
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def layernorm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def relu_in_place(x):
    x[x < 0] = 0
    return x


def rows_into_zeros(x):
    out = np.zeros(x.shape)  # a local array: traced, its rows' stores captured functionally
    for i in range(x.shape[0]):
        out[i] = x[i] * i + 1
    return out


def rows_into_zeros_like(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * i + 1
    return out


def column_norms(x):
    s = np.zeros(x.shape[1])
    for i in range(len(x)):
        s = s + x[i] ** 2
    return np.sqrt(s)


def update_two(x, y):
    x *= 2
    y[:, 0] = x[:, 1]
    return x.sum()


def bump_rows(x):
    x[1:3] += 1.0
    return x[0]


def centered_if_positive(x):
    if x.max() > 0:
        return x - x.max()
    return x


def attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return p @ v


def cross_entropy(logits, y):
    m = logits.max(1, keepdims=True)
    lse = m + np.log(np.exp(logits - m).sum(1, keepdims=True))
    return (lse[:, 0] - logits[np.arange(len(y)), y]).mean()


def adam(p, g, m, v, lr, t):
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    p -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)


def halve(x, tol):
    n = 0
    while np.abs(x).max() > tol:
        x = x / 2
        n += 1
    return x, n


def newton_sqrt(a):
    x = np.ones_like(a)
    for _ in range(8):
        x = 0.5 * (x + a / x)
    return x


def running_columns(x):
    x[:, 1:] += x[:, :-1]  # the operand is read before the write: native (stax.trace)
    return x


NATIVE = [
    ("rows_loop", rows_into_zeros_like, (Y,), None),
    ("rows_into_np_zeros", rows_into_zeros, (Y,), None),
    ("column_norms", column_norms, (Y,), 8),
    ("relu_in_place", relu_in_place, (X,), None),
    ("where_isnan", lambda x: np.where(np.isnan(x), 0, x), (X,), None),
    ("where_isnan_f32", lambda x: np.where(np.isnan(x), 0, x), (X32,), None),
    ("softmax", softmax, (Y,), 8),
    ("softmax_f32", softmax, (Y32,), 8),
    ("logsumexp", logsumexp, (Y,), 8),
    ("layernorm", layernorm, (Y, Y[0], Y[1], 1e-5), 16),
    ("floor_div_mod", lambda a, b: (a // b, a % b, np.floor_divide(a, -3), np.remainder(a, 3)),
     (I, J), None),
    ("float_div_mod", lambda a, b: (a // b, a % b, np.fmod(a, b)),
     (X, np.array([2.0, -2.0, 0.0, -0.0, np.inf, -np.inf, np.nan])), None),
    ("int_div_by_zero", lambda a, b: (a // b, a % b), (I, np.array([0, 1, 2, -1, 3, 0, 5])), None),
    ("shifts", lambda a, s: (a >> 2, a << 3, a >> s, a << s), (I, np.abs(J)), None),
    ("shifts_past_width", lambda a, s: (a >> s, a << s, a.astype(np.int32) >> s.astype(np.int32)),
     (I, np.array([0, 31, 32, 63, 64, 65, 70])), None),
    ("int_min", lambda a: (np.abs(a), -a, a // -1, a % -1),
     (np.array([np.iinfo(np.int64).min, -1, 5]),), None),
    ("int8_wraps", lambda a, b: (a + b, a * b, a * a * a, -a), ((I * 7).astype(np.int8),
                                                                (J * 30).astype(np.int8)), None),
    ("uint8_scalars", lambda a: (a + 1, a * 3, a // 2, a - 200, a + 1.5), (np.abs(I).astype(np.uint8),),
     None),
    ("argmax_nan", lambda x: (x.argmax(-1), x.argmin(0), np.argmax(x), np.argmin(x)), (X,), None),
    ("max_min_nan", lambda x: (x.max(-1), x.min(0), np.max(x), np.maximum(x, 0.0)), (X,), None),
    ("elementwise_signed_zeros", lambda x: (np.maximum(x, -x), np.minimum(x, -x), np.sign(x),
                                            np.copysign(1.0, x), np.abs(x)), (X,), None),
    ("sign_f32_int", lambda x, i: (np.sign(x), np.sign(i)), (X32, I), None),
    ("round_family", lambda x: (np.round(x * 3), np.floor(x), np.ceil(x), np.trunc(x),
                                np.rint(x * 2.5), np.round(x, 2)), (X,), None),
    ("cumsum_both_axes", lambda x: (np.cumsum(x, 0), np.cumsum(x, 1), np.cumsum(x)), (Y,), 16),
    ("cumsum_cumprod_int", lambda x: (np.cumsum(x, 0), np.cumsum(x, -1), np.cumprod(x, 1),
                                      np.cumsum(x.astype(np.int32), 1), np.cumsum(x > 0, 1)),
     (I,), None),
    ("concat_stack_pad", lambda a, b: (np.concatenate([a, b], 1), np.stack([a, b], -1),
                                       np.pad(a, ((0, 2), (1, 0))), np.pad(a, 1, mode="edge")),
     (Y, X), None),
    ("gathers", lambda a, i: (a[i], a[:, i[:3] % 7], np.take(a, i, axis=0), a[a > 0]),
     (Y, np.array([0, 4, -1, 2])), None),
    ("take_along_argmax", lambda a: np.take_along_axis(a, np.argmax(a, 1)[:, None], 1), (Y,), None),
    ("fancy_2d_int32", lambda a, i, j: a[i, j], (Y, np.array([0, 1, 4], np.int32),
                                               np.array([6, 0, 3], np.uint8)), None),
    ("flip_and_reverse", lambda x: (np.flip(x, 0) - x, x[:, ::-1] * 2), (Y,), None),
    ("zero_d", lambda x, y: (x * y, x + 1, np.sqrt(x), y // 2), (np.array(2.5), np.array(-7)), None),
    ("to_scalars", lambda x: (x.sum(), x.max(), x.argmax(), (x > 0).any(), (x > 0).all()), (Y,), 8),
    ("dict_and_tuple", lambda x: {"a": (x + 1, x.T), "b": x.max(0)}, (Y,), None),
    ("update_two", update_two, (Y, Y + 1), 16),
    ("bump_rows", bump_rows, (Y,), None),
    ("data_gate", centered_if_positive, (Y,), None),
    ("bool_masks", lambda m, n: (m & n, m ^ n, ~m, m.sum(0), m.mean(), m * 1.5, m.argmax(1)),
     (I > 0, I < 10), None),
    ("mixed_dtypes", lambda a, b, c: (a + b, a * c, b / a, a.astype(np.float32) / 3),
     (I.astype(np.int32), I, Y32), None),
    ("float_to_int", lambda x: (x.astype(np.int64), x.astype(np.uint8), x.astype(np.int8)),
     (Y * 50,), None),
    ("float16", lambda x: (x * 2 + 1, x.max(0)), (Y.astype(np.float16),), None),
    ("nan_reductions", lambda x: (np.nansum(x, 0), np.nanmax(x, 1)), (X,), 16),
    ("var_std", lambda x: (x.var(0), x.std(1, ddof=1), x.var(1, keepdims=True)), (Y,), 32),
    ("multi_axis", lambda x: (x.sum(axis=(0, 2)), np.max(x, axis=(0, 1)), x.min(axis=(0, 2)),
                              x.mean(axis=(1, 2), keepdims=True)), (Y3,), 16),
    ("arg_keepdims_any_all", lambda x: (np.argmax(x, axis=1, keepdims=True), x.any(0), x.all(1),
                                        np.any(x, axis=1, keepdims=True)), (X,), None),
    ("sum_dtype", lambda x: (x.sum(dtype=np.float64), x.sum(0, dtype=np.int32),
                             np.mean(x, axis=1, dtype=np.float32), x.prod(0)), ((I % 5).astype(np.int8),),
     None),
    ("clip_where_dtypes", lambda x, i: (np.clip(i, -5, 5), np.clip(i, -2.5, 3), np.where(x > 0, 1, 0.5),
                                        np.where(x > 0, x, np.nan), np.where(i > 0, i, -1)),
     (X32, I.astype(np.int16)), None),
    ("shape_functions", lambda x: (np.pad(x, 2, constant_values=-1.5), np.pad(x, 1, mode="wrap"),
                                   np.pad(x, ((1, 1), (2, 0)), mode="reflect"), np.repeat(x, 2, axis=0),
                                   np.tile(x, (2, 1)), np.roll(x, -2, axis=1), *np.array_split(x, 3, axis=1)),
     (X,), None),
    ("attention_f32", attention, (Y32[:4], Y32, Y32 * 2), 64),
    ("cross_entropy", cross_entropy, (Y, np.array([0, 6, 2, 3, 1])), 16),
    ("adam_in_place", adam, (Y[0], Y[1], np.zeros(7), np.zeros(7), 1e-3, 1), 4),
    ("gate_in_a_while_loop", halve, (Y * 10, 0.5), None),
    ("newton_sqrt", newton_sqrt, (P,), 2),
    ("running_columns", running_columns, (Y,), None),
]


@pytest.mark.parametrize("fn, args, ulp", [pytest.param(*c[1:], id=c[0]) for c in NATIVE])
def test_native_programs_match_numpy(fn, args, ulp):
    cf = run_both(fn, args, ulp, strict_native=True)
    assert native(cf)


TRANSCENDENTAL = ["exp", "log", "sqrt", "tanh", "sin", "cos", "expm1", "log1p", "log2", "arctan",
                  "sinh", "arcsinh", "arccos", "cbrt"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transcendental_functions_within_four_ulp(dtype):
    x, p = X.astype(dtype), P.astype(dtype)
    for name in TRANSCENDENTAL:
        run_both(getattr(np, name), (x,), 4, strict_native=True)
    run_both(lambda a, b: (a ** b, a ** 0.5, np.arctan2(a, b), np.hypot(a, b), np.logaddexp(a, b),
                           1 / (1 + np.exp(-a))), (x, p), 4, strict_native=True)


def test_scalar_parameters_that_change_between_calls():
    cf = stax.compile(lambda x, a, n: x * a + n, device="cuda")
    x = torch.from_numpy(Y32)
    for a, n in [(2.0, 1), (3.0, 1), (2.0, 1), (np.float32(2.5), 2), (np.float64(2.5), 2)]:
        assert_same(cf(x, a, n), Y32 * a + n, None)
    assert cf.cache_info().compiles == 4 and native(cf)


def test_in_place_updates_of_views_reach_the_caller():
    def scale(x, a):
        x *= a

    for view in (lambda t: t.T, lambda t: t[1::2, ::2], lambda t: t[:, 2], lambda t: t[1, 1]):
        base, expected = torch.from_numpy(Y.copy()), Y.copy()
        cf = stax.compile(scale, device="cuda", strict_native=True)
        for _ in range(2):
            assert cf(view(base), 3.0) is None
            scale(view(torch.from_numpy(expected)).numpy(), 3.0)
        assert_same(base, expected, None)


# -- NumPy's exceptions ----------------------------------------------------------------------------

RAISING = [
    ("row_out_of_bounds", lambda a, i: a[i], (Y, np.array([0, 5])), IndexError),
    ("negative_out_of_bounds", lambda a, i: a[i], (Y, np.array([0, -6])), IndexError),
    ("column_out_of_bounds", lambda a, i: a[:, i], (Y, np.array([0, 7])), IndexError),
    ("take_out_of_bounds", lambda a, i: np.take(a, i), (Y, np.array([0, 35])), IndexError),
    ("setitem_out_of_bounds", lambda a, i: a.__setitem__(i, 0.0), (Y, np.array([1, 9])), IndexError),
    ("mask_of_wrong_length", lambda a, m: a[m], (Y, np.array([True, False])), IndexError),
    ("max_of_empty", lambda x: x.max(0), (np.zeros((0, 5)),), ValueError),
    ("negative_int_power", lambda a, b: a ** b, (I, -np.abs(J)), ValueError),
    ("broadcast_mismatch", lambda x, y: x + y, (Y, Y[:4]), ValueError),
]


@pytest.mark.parametrize("fn, args, error", [pytest.param(*c[1:], id=c[0]) for c in RAISING])
def test_numpy_errors_are_raised(fn, args, error):
    with pytest.raises(error):
        fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    with pytest.raises(error):
        stax.compile(fn, device="cuda")(*tensorize(list(args)))


EMPTY_PROGRAM = textwrap.dedent("""
    import numpy as np, torch, stax.runtime as stax
    f = lambda x: (x * 2, x.sum(0), x.sum(1), x.max(1), np.cumsum(x, 0), np.cumsum(x, 1))
    got = stax.compile(f, device="cuda", strict_native=True)(torch.zeros((0, 5), dtype=torch.float64))
    want = f(np.zeros((0, 5)))
    assert all(g.numpy().shape == w.shape and g.numpy().dtype == w.dtype for g, w in zip(got, want))
    assert [g.numpy().tolist() for g in got] == [w.tolist() for w in want]
    print("ok")
""")


def test_empty_arrays_in_a_subprocess():
    """In a subprocess: a kernel writing out of bounds crashes the interpreter's process (it did:
    a scan axis of extent 0 had its mask written as all true, since 0 % R0_BLOCK == 0)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", EMPTY_PROGRAM], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


# -- fallbacks: one log line with the reason; strict_native raises it ----------------------------

def multiply_at(a, i, v):
    np.multiply.at(a, i, v)
    return a


def transposed_kept(x):
    v = x.T
    x[:, 1:] += 1.0  # v still views x afterwards, not as x[key]: not captured
    return x + v.sum()


FALLBACKS = [
    ("multiply_at", multiply_at, (np.ones(5), np.array([0, 1, 1, 4]),
                                  np.array([1.0, 2.0, 3.0, 4.0])),
     "numpy.multiply.at is not captured yet"),
    ("overlapping_update", transposed_kept, (Y,), "of an argument another value views"),
    ("complex", lambda x: x * 2 + 1, (Y.astype(np.complex128),), "dtype complex128"),
]


@pytest.mark.parametrize("fn, args, reason", [pytest.param(*c[1:], id=c[0]) for c in FALLBACKS])
def test_fallbacks_log_one_line_and_strict_raises(fn, args, reason, caplog):
    with pytest.raises(UnsupportedError, match=reason):
        stax.compile(fn, device="cuda", strict_native=True)(*tensorize(list(args)))
    with caplog.at_level(logging.WARNING, logger="stax"):
        cf = run_both(fn, args)  # the first call: the capture's result; then an eager call
        for _ in range(2):  # eager calls through CuPy (NumPy views here), two each
            run_both(fn, args, compiled=cf)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "falls back to eager NumPy through CuPy on torch:cpu" in lines[0]
    assert reason in lines[0]
    assert not any(v.native for v in cf.versions()) and cf.cache_info().fallbacks == 6


def pairwise_then_square(x):
    return (x[:, None, :] - x[None, :, :]).sum(-1) ** 2


@pytest.mark.parametrize("fn", [pairwise_then_square,
                                lambda x: (x[:, None, :] * x[None, :, :]).max(-1) + 1])
def test_a_broadcast_reduction_with_an_epilogue_is_native(fn):
    run_both(fn, (Y,), 64, strict_native=True)


def test_two_reductions_of_a_permuted_tensor_are_native():
    x = torch.from_numpy(RNG.standard_normal((4, 5, 6))).permute(2, 0, 1)
    cf = stax.compile(lambda x: (x.sum(1), x.sum(2)), device="cuda", strict_native=True)
    for got, want in zip(cf(x), (x.numpy().sum(1), x.numpy().sum(2))):
        assert_same(got, want, 16)


def test_writing_into_an_expanded_tensor_raises_numpys_error():
    """An expanded tensor is read-only to NumPy (as np.broadcast_to's view): the capture refuses
    the update and the eager run raises NumPy's ValueError, call after call, leaving the tensor
    as it was (it used to write through a writeable view); reading it in a fallback works."""
    def scale(x, a):
        x *= a

    base = torch.from_numpy(Y[:1].copy())
    with pytest.raises(ValueError, match="read-only"):
        scale(np.broadcast_to(Y[:1], (5, 7)), 2.0)
    cf = stax.compile(scale, device="cuda")
    for _ in range(2):
        with pytest.raises(ValueError, match="read-only"):
            cf(base.expand(5, 7), 2.0)
    assert_same(base, Y[:1], None)
    read = stax.compile(lambda x, i, v: (np.add.at(v, i, x[0, :3]), v * x)[1], device="cuda")
    for _ in range(2):
        v = torch.zeros(7, dtype=torch.float64)
        got = read(base.expand(5, 7), torch.tensor([1, 1, 3]), v)
        want_v = np.zeros(7)
        np.add.at(want_v, [1, 1, 3], Y[0, :3])
        assert_same(v, want_v, None)
        assert_same(got, want_v * np.broadcast_to(Y[:1], (5, 7)), None)


def bump_then_fail(x):
    x += 1
    if x.max() > -1e9:
        raise ValueError("after the update")
    return x


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_the_functions_own_error_after_an_in_place_update_leaves_the_update(kind):
    """NumPy leaves ``x += 1`` done when the function raises afterwards; the capture ran the
    call on its own copies and used to drop the update (on the CPU too)."""
    x = Y.copy() if kind == "numpy" else torch.from_numpy(Y.copy())
    cf, want = stax.compile(bump_then_fail), Y.copy()
    for _ in range(2):
        with pytest.raises(ValueError, match="after the update"):
            cf(x)
        want += 1
        np.testing.assert_array_equal(np.asarray(x), want)


def test_an_index_error_after_an_in_place_update_leaves_the_update():
    """A compiled version declines a call whose index is out of bounds and runs it on host copies
    for NumPy's IndexError: the update made before the error reaches the caller's tensor."""
    def bump_then_gather(x, i):
        x += 1
        return x[i]

    x = torch.from_numpy(Y.copy())
    cf = stax.compile(bump_then_gather, device="cuda")
    assert_same(cf(x, torch.tensor([0, 2])), (Y + 1)[[0, 2]], None)
    assert native(cf)
    with pytest.raises(IndexError):
        cf(x, torch.tensor([0, 9]))
    assert_same(x, Y + 1 + 1, None)


# -- free variables: globals read, not attribute names ---------------------------------------------

mean = np.zeros(7)  # a global array named like the method x.mean the functions below call
TABLE = np.arange(7.0)


class Scaler:
    def __init__(self):
        self.mean = 2.0

    def center(self, x):
        return x * x.mean() * self.mean

    def lookup(self, x):
        return x * TABLE


def test_an_attribute_named_like_a_global_array_is_not_a_free_variable():
    """``x.mean()`` and ``self.mean`` name an attribute, not the global array ``mean``: the CUDA
    call used to be refused ("reads the NumPy array 'mean'") and the CPU version keyed on it."""
    cf = run_both(lambda x: x * x.mean(), (P,), 4, strict_native=True)
    assert native(cf)
    run_both(Scaler().center, (P,), 4, strict_native=True)
    assert stax.compile(Scaler().center)._free.names == []


def test_a_bound_method_reading_a_global_array():
    """The lifted clone of a bound method is bound to the same object (it used to lose ``self``:
    a TypeError on the CPU)."""
    cf = stax.compile(Scaler().lookup)
    np.testing.assert_array_equal(cf(Y), Y * TABLE)
    assert cf.versions()[0].native
    with pytest.raises(stax.StaxError, match="reads the NumPy array 'TABLE'"):
        stax.compile(Scaler().lookup)(torch.from_numpy(Y))


@pytest.mark.parametrize("fn", [lambda x: x.T, lambda x: x[::2], lambda x: x[1], lambda x: x.reshape(7, 5),
                                lambda x: x.ravel(), lambda x: (x[1:], x.sum())],
                         ids=["T", "slice", "row", "reshape", "ravel", "tuple"])
def test_a_returned_view_writes_through_to_the_argument(fn):
    """A view the function returns is a view of the argument, as NumPy's (and the CPU version's)
    is: writing into it writes into the argument. It used to be a copy on CUDA."""
    x, t = Y.copy(), torch.from_numpy(Y.copy())
    cf = stax.compile(fn, device="cuda", strict_native=True)
    for call in range(2):
        want, got = fn(x), cf(t)
        want, got = (want[0], got[0]) if isinstance(want, tuple) else (want, got)
        assert_same(got, want, None)
        want[...] = -1.0 - call
        got[...] = -1.0 - call
        assert_same(t, x, None)


class Config:
    def __init__(self, w):
        self.w, self.scale = w, 2.0


def test_an_object_holding_a_tensor_is_a_clear_error():
    """A config object holding a tensor: the call cannot be keyed, and the eager run used to end
    in a TypeError from the function (a NumPy view of x times the torch tensor)."""
    def scaled(x, cfg):
        return x * cfg.w * cfg.scale

    x, w = tensorize([Y, Y])
    for options in ({}, {"strict_native": True}):
        with pytest.raises(stax.StaxError, match=r"argument object .* holds a torch tensor.*pass "
                                                 r"the tensor as an argument"):
            stax.compile(scaled, device="cuda", **options)(x, Config(w))
    got = stax.compile(lambda x, ws: x * ws[0] * ws[1]["s"], device="cuda")(x, (w, {"s": w}))
    assert_same(got, Y * Y * Y, None)
    cf = stax.compile(scaled)  # NumPy arrays in the object: the CPU runs it
    np.testing.assert_array_equal(cf(Y, Config(Y)), Y * Y * 2.0)


class TorchModel:
    def __init__(self):
        self.w = torch.from_numpy(Y[0].copy())

    def forward(self, x):
        return np.tanh(x * self.w)


def test_a_method_reading_a_tensor_attribute_is_a_clear_error():
    """``model.forward`` reading ``self.w`` (a tensor): the capture refused to key it and the
    eager fallback ended in a TypeError from the function."""
    x, = tensorize([Y])
    for options in ({}, {"strict_native": True}):
        with pytest.raises(stax.StaxError, match=r"a value it reads holds a torch tensor.*pass the "
                                                 r"tensor as an argument"):
            stax.compile(TorchModel().forward, device="cuda", **options)(x)


def test_a_scalar_result_of_a_fallback_is_a_0d_tensor():
    """A fallback's scalar result (``v @ A @ v``, a NumPy float64) comes back as a 0-d tensor, as
    the kernels return scalars; ``np.ascontiguousarray`` made it of shape (1,)."""
    def rayleigh(a, iters):
        v = np.ones(a.shape[0]) / np.sqrt(a.shape[0])
        for _ in range(iters):
            w = a @ v
            v = w / np.linalg.norm(w)
        return v @ a @ v, np.abs(a.astype(np.complex128)).sum()  # complex: a fallback

    a = Y[:5, :5] + Y[:5, :5].T
    cf = run_both(rayleigh, (a, 4), 64)
    run_both(rayleigh, (a, 4), 64, compiled=cf)
    assert not cf.versions()[0].native
    library = devices.library_of(torch.zeros(1))
    assert library.from_numpy(np.array(2.5), torch.zeros(1)).shape == ()


def test_gated_in_place_updates_and_random_draws_over_calls():
    """A data gate choosing an in-place update, and draws from a Generator argument, call after
    call (hits included): the tensors and the generator end as NumPy leaves them."""
    def gated_update(x, y):
        if x.sum() > 0:
            x += y
        else:
            x -= y
        return x.max()

    def noisy(x, rng):
        p = rng.permutation(x.shape[0])
        return x[p] + rng.normal(size=x.shape), rng.integers(0, 10, 3)

    cf = stax.compile(gated_update, device="cuda", strict_native=True)
    x, y = torch.from_numpy(np.abs(Y)), torch.from_numpy(Y)
    want = np.abs(Y)
    for _ in range(4):
        assert_same(cf(x, y), gated_update(want, Y), None)
        assert_same(x, want, None)
    assert native(cf) and cf.cache_info().compiles == 1
    mine, theirs = np.random.default_rng(3), np.random.default_rng(3)
    cf = stax.compile(noisy, device="cuda", strict_native=True)
    for _ in range(3):
        for got, want in zip(cf(torch.from_numpy(Y), mine), noisy(Y, theirs)):
            assert_same(got, want, None)
    assert mine.random() == theirs.random() and native(cf)
