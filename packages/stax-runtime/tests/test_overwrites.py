"""Arguments updated in place are written over by the call's last kernels (``stax.loop.overwrites``,
``KernelArtifact.overwrites``): the argument's final value goes straight into its memory once the
call stands, never through a buffer copied back, and a call that declines leaves it untouched."""

import re
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import Executable, KernelArtifact, generate, load_artifact
from stax.codegen.cpu.jit import CompiledModule
from stax.ir import load_opgraph
from stax.loop import LoopOptions, load_loopir, lower_opgraph


def clip_inplace_sum(x):
    np.clip(x, -2.0, 2.0, out=x)
    x[0] = 0.0
    return x.sum()


def relu_inplace_mean(x):
    x[x < 0] = 0
    return x.mean()


def negate_then_scale(x):
    np.negative(x, out=x)  # exact: recomputed by the late kernel
    return (x * 3.0).sum()


def scale_then_sum(x):
    x *= 2  # may overflow: computed by the program, copied by the late kernel
    return x.sum()


def shift_and_add(x, y):
    x[1:] = x[:-1] * 2  # reads x elsewhere than it writes: computed, then copied
    y += x
    return y.max()


def halve_ints(x):
    x //= 3
    return x.sum()


def _layouts(rng, dtype, n=(96, 130)):
    base = rng.standard_normal((n[0] * 2, n[1])) * 3
    base[1, 2], base[5, 7], base[6, 9], base[9, 1] = np.nan, -0.0, np.inf, -np.inf
    base = base.astype(dtype)
    return {"contiguous": lambda: base[: n[0]].copy(),
            "transposed": lambda: np.asfortranarray(base[: n[0]]),
            "sliced": lambda: base.copy()[::2],
            "reversed rows": lambda: base.copy()[::-2]}


def _check(fn, *make, n_args=1):
    compiled = stax.compile(fn)
    for _ in range(2):  # the compiling call, then a cached one
        want_args = [m() for m in make]
        got_args = [m() for m in make]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fn(*want_args)
            got = compiled(*got_args)
        # sums in another order than NumPy's pairwise one: close (to the sum of magnitudes)
        scale = sum(float(np.nansum(np.abs(w[np.isfinite(w)]), dtype=np.float64))
                    for w in want_args)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale + 1e-6)
        for g, w in zip(got_args, want_args):
            np.testing.assert_array_equal(g, w)
            assert np.array_equal(np.signbit(g), np.signbit(w))
    return compiled


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "reversed rows"])
@pytest.mark.parametrize("fn", [clip_inplace_sum, relu_inplace_mean, negate_then_scale],
                         ids=lambda f: f.__name__)
def test_updated_arguments_match_numpy(fn, layout, dtype):
    rng = np.random.default_rng(0)
    compiled = _check(fn, _layouts(rng, dtype)[layout])
    artifact = compiled.versions()[0].artifact
    if layout != "reversed rows":  # negative strides: copied back by the caller instead
        assert list(artifact.overwrites.values()) == ["x"]
        assert [b.role for b in artifact.buffers if b.name in artifact.overwrites] == ["overwrite"]


def test_an_element_wise_update_is_recomputed_over_the_argument():
    """x is read once by the program's kernels and once by the late kernel, which writes it:
    no buffer of x's size is planned."""
    compiled = _check(clip_inplace_sum, lambda: np.linspace(-4, 4, 100_000, dtype=np.float32))
    artifact = compiled.versions()[0].artifact
    assert all(np.prod(b.shape) < 100_000 for b in artifact.buffers
               if b.role in ("intermediate", "output"))
    late = artifact.kernels[-1]
    assert artifact.steps[-1] == late.name and late.computes == tuple(artifact.overwrites)
    assert "$events" not in late.args  # its events are the program's, decided before it runs
    assert "written into argument x's memory once the call stands" in str(artifact)


def masked_fixes(x, y):
    x[x < 0] = 0
    np.copyto(y, 1.5, where=y > 2)
    return x, y


#: a vector store under a mask: AVX2's vmaskmov, or an AVX-512 store with a mask register
_MASKED_STORE = re.compile(r"vp?maskmov|vmov\w+\s+%[xyz]mm\d+, [^\n]*\)\s*\{%k")


def test_an_update_under_a_mask_is_a_plain_vector_store():
    """``store(select(m, v, load p), p)`` — an update under a mask written over its own memory —
    must not become a masked store: LLVM's x86 back end makes it ``vmaskmovps``, which an AMD
    EPYC (znver3) runs 3-8x slower than a blend and a plain store at every size (200K float32
    in place: 146 us against 18). The late kernel's loads of the updated memory are frozen."""
    make = lambda: np.linspace(-4, 4, 100_000, dtype=np.float32)  # noqa: E731
    compiled = _check(masked_fixes, make, make, n_args=2)
    artifact = compiled.versions()[0].artifact
    assembly = CompiledModule(artifact.llvm_ir).assembly()
    assert "vmovups" in assembly or "vmovaps" in assembly  # vectorized
    assert not _MASKED_STORE.search(assembly), _MASKED_STORE.search(assembly)


@pytest.mark.parametrize("fn, make", [
    (scale_then_sum, lambda: np.linspace(-4, 4, 5000, dtype=np.float32)),
    (halve_ints, lambda: np.arange(-5000, 5000, 3, dtype=np.int64)),
], ids=["float events", "integers"])
def test_other_updates_are_written_over_the_argument(fn, make):
    artifact = _check(fn, make).versions()[0].artifact
    assert list(artifact.overwrites.values()) == ["x"]


def test_two_arguments_updated_from_each_other():
    rng = np.random.default_rng(1)
    x0, y0 = rng.standard_normal(3000).astype(np.float32), rng.standard_normal(3000)
    artifact = _check(shift_and_add, x0.copy, y0.copy).versions()[0].artifact
    assert sorted(artifact.overwrites.values()) == ["x", "y"]


def test_a_declined_call_leaves_the_argument_for_the_eager_run():
    """With division by zero raising, the call declines once its events are known; the eager run
    then updates x once and raises, as NumPy does: x is never updated by the kernels first."""
    def clip_then_divide(x, y):
        np.clip(x, -1.0, 1.0, out=x)
        x += 0.5
        return (x / y).sum()

    compiled = stax.compile(clip_then_divide)
    x0 = np.linspace(-3, 3, 1000)
    y = np.ones(1000)
    x = x0.copy()
    compiled(x, y)
    np.testing.assert_array_equal(x, np.clip(x0, -1, 1) + 0.5)
    y[10] = 0.0
    x, want = x0.copy(), x0.copy()
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            clip_then_divide(want, y)
        with pytest.raises(FloatingPointError):
            compiled(x, y)
    np.testing.assert_array_equal(x, want)  # updated once


def test_a_precise_rerun_writes_the_argument_once():
    """1e308 * 3 sends the fast kernels' call to the precise ones (an overflow NumPy's error
    state ignores here); the late kernels of the fast run never ran, so x is bumped once."""
    def bump_then_scale(x, y):
        x += 1
        return (y * 3.0).sum()

    compiled = stax.compile(bump_then_scale)
    x0, y = np.arange(5000), np.linspace(-3, 3, 5000)
    compiled(x0.copy(), y)
    y[123] = 1e308
    x = x0.copy()
    with np.errstate(over="ignore"):
        got = compiled(x, y)
    assert compiled.versions()[0].flat[0].reruns == 1
    np.testing.assert_array_equal(x, x0 + 1)
    assert got == np.inf


def test_the_loop_program_records_and_reads_back_its_overwrites(tmp_path, monkeypatch):
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    stax.compile(relu_inplace_mean)(np.linspace(-1, 1, 1000, dtype=np.float32))
    loop = load_loopir(next(tmp_path.glob("*.loopir.json")))
    assert list(loop.overwrites.values()) == ["x"]
    assert loop.to_json()["schema"] == "stax.loopir/1.6"
    assert load_loopir(loop.to_json()).to_json() == loop.to_json()
    assert "written over x once the call stands" in str(loop)
    artifact = load_artifact(next(tmp_path.glob("*.kernels.json")))
    assert artifact.schema == "stax.kernels/1.8" and list(artifact.overwrites.values()) == ["x"]
    assert artifact.to_json() == KernelArtifact.from_json(artifact.to_json()).to_json()
    # without the option, the final value is an output the caller copies back (the Triton
    # target's choice), and the document declares 1.5 as before
    opgraph = load_opgraph(next(tmp_path.glob("*.opgraph.json")))
    plain = lower_opgraph(opgraph, options=LoopOptions(overwrite_arguments=False))
    assert not plain.overwrites and plain.to_json()["schema"] == "stax.loopir/1.5"
    x0 = np.linspace(-1, 1, 1000, dtype=np.float32)
    x = x0.copy()
    mean, final = Executable(generate(plain))(x)
    assert final is not x and np.array_equal(x, x0) and np.array_equal(final, np.maximum(x0, 0))
    again, final = Executable(generate(loop))(x)
    assert again == mean and final is x and np.array_equal(x, np.maximum(x0, 0))  # written over


def scale_in_place(x, s):
    x *= s


def center_in_place(x):
    x -= x.mean()
    return x


def test_an_update_that_may_overflow_reports_after_it_wrote_as_numpys_in_place_ufunc():
    """``x *= s``: the late kernel writes the product over x and reports its events after, as
    NumPy's in-place multiply does (``KernelArtifact.late_reports``): no buffer of x's size and
    no twin pass. An overflow leaves x multiplied once and warns as NumPy does."""
    compiled = stax.compile(scale_in_place)
    x0 = np.linspace(-4, 4, 50_000, dtype=np.float32)
    x = x0.copy()
    compiled(x, 3.0)
    np.testing.assert_array_equal(x, x0 * np.float32(3.0))
    artifact = compiled.versions()[0].artifact
    assert not [b for b in artifact.buffers if b.role in ("intermediate", "output")]
    assert "(unstored)" not in str(artifact)
    assert [ufunc for ufunc, _ in artifact.late_reports.values()] == ["multiply"]
    x = x0.copy()
    with pytest.warns(RuntimeWarning, match="overflow encountered in multiply"):
        compiled(x, 1e38)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = x0.copy()
        scale_in_place(want, 1e38)
    np.testing.assert_array_equal(x, want)  # multiplied once


def _updates_alike(fn, compiled, data):
    """One eager and one compiled call on copies of ``data``: the same array after, the same
    warnings."""
    want, got = data.copy(), data.copy()
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        fn(want)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled(got)
    np.testing.assert_array_equal(got, want)
    assert [str(w.message) for w in seen] == [str(w.message) for w in eager]


@pytest.mark.parametrize("update", [
    lambda x: x.__imul__(0.25), lambda x: x.__itruediv__(4.0), lambda x: x.__imul__(-1.0),
    lambda x: x.__itruediv__(0.5), lambda x: x.__imul__(4.0), lambda x: x.__imul__(0.0)],
    ids=["times_quarter", "over_four", "times_minus_one", "over_half", "times_four", "times_zero"])
def test_an_in_place_product_or_quotient_needs_no_twin(update):
    """A product or quotient by a constant, in place: one pass over x (``x *= 0.25``: 26 -> 18
    us at 200,000 float32 on a loaded Intel VM), its events reported after, as NumPy's, under
    the default state and with underflow heeded."""
    def fn(x):
        update(x)
        return x
    compiled = stax.compile(fn)
    x0 = np.array([1.0, -0.0, np.inf, -np.inf, np.nan, 3e38, 1e-45, -2.5], np.float32)
    for _ in range(2):
        _updates_alike(fn, compiled, x0)
    assert "(unstored)" not in str(compiled.versions()[0].artifact)
    with np.errstate(under="warn"):  # heeded underflow: the call runs eagerly, NumPy warns
        _updates_alike(fn, compiled, x0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_centering_in_place_is_numpys(dtype, layout):
    """The mean is NumPy's within rounding (another summation order), so x is too."""
    make = _layouts(np.random.default_rng(2), dtype)[layout]
    compiled = stax.compile(center_in_place)
    for _ in range(2):
        x, want = make(), make()
        x[~np.isfinite(x)] = want[~np.isfinite(want)] = 0.5
        got = compiled(x)
        center_in_place(want)
        assert got is x
        np.testing.assert_allclose(x, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6)
    assert list(compiled.versions()[0].artifact.overwrites.values()) == ["x"]


def doubled_then_branch(x):
    x *= 2.0
    if x.max() > 1.0:  # a data gate the program checks (its value is exact)
        return x - 1.0
    return x + 1.0


def test_a_gate_checked_in_the_program_comes_before_the_argument_is_written():
    """The update's final value is found after the user's outputs, before the gate values the
    program also returns; a call taking the other branch is declined before the late kernel
    runs, so the version that applies doubles x once."""
    compiled = stax.compile(doubled_then_branch)
    for scale in (1.0, 0.1, 1.0, 0.1):
        x0 = np.linspace(-1, 1, 1000) * scale
        x, want_x = x0.copy(), x0.copy()
        got, want = compiled(x), doubled_then_branch(want_x)
        np.testing.assert_array_equal(x, want_x)
        np.testing.assert_array_equal(got, want)
    for version in compiled.versions():
        assert version.gate_check is not None and version.gate_check.active
        assert list(version.artifact.overwrites.values()) == ["x"]
    assert compiled.cache_info().versions == 2


def _normalize(x):
    x /= np.linalg.norm(x)
    return x


def _normalize_assigned(x):
    x[...] = x / np.linalg.norm(x)  # NumPy divides into a temporary first: a twin decides
    return x


def _by_smallest(x):
    x /= x.min()
    return x


def _times_largest(x):
    x *= x.max()
    return x


@pytest.mark.parametrize("fn, data", [
    (_normalize, np.linspace(1, 2, 4000, dtype=np.float32)),
    (_normalize, np.zeros(4000, np.float32)),                         # 0 / 0: invalid
    (_normalize, np.full(4000, 1e-30, np.float32)),                   # the divisor below 1
    (_normalize_assigned, np.linspace(1, 2, 4000, dtype=np.float32)),
    (_normalize_assigned, np.zeros(4000, np.float32)),
    (_normalize_assigned, np.full(4000, 1e-30, np.float32)),
    (_by_smallest, np.array([3e38, 1e-3, 2.0], np.float32)),          # overflow
    (_by_smallest, np.array([4.0, 2.0, np.inf], np.float32)),
    (_times_largest, np.array([0.5, 0.25, np.nan], np.float32)),      # a NaN factor
    (_times_largest, np.array([0.5, 0.25, 0.75], np.float32)),
    (_times_largest, np.array([3e38, 1.0, 2.0], np.float32))],        # overflow
    ids=["normalize", "zeros", "tiny", "assigned", "assigned_zeros", "assigned_tiny", "overflow",
         "inf", "nan_factor", "shrinking", "growing"])
def test_a_twin_whose_factor_is_known_at_run_time_skips_only_when_nothing_can_report(fn, data):
    """``x /= np.linalg.norm(x)``: the events twin returns at its start when the divisor is
    finite and at least 1 in magnitude (``cpu/twin_skip.py``), else decides the events as
    before: NumPy's warnings, and the argument updated once."""
    compiled = stax.compile(fn)
    for _ in range(2):
        _updates_alike(fn, compiled, data)
    artifact = compiled.versions()[0].artifact
    if fn is _normalize_assigned:
        assert "twin_skipped" in artifact.llvm_ir and not artifact.late_reports
    else:  # in place: no twin, NumPy's divide reports after the write
        assert next(iter(artifact.late_reports.values()))[0] in ("divide", "multiply")


def test_an_empty_argument_updated_in_place_is_compiled():
    """``np.ones((0, 7))`` has strides (0, 0): no two elements share memory (it has none), so
    the update compiles instead of running eagerly as a self-overlapping argument."""
    cf = stax.compile(scale_then_sum)
    for _ in range(3):
        x = np.ones((0, 7), np.float32)
        assert cf(x) == 0.0
    assert cf.versions()[0].native and cf.cache_info().fallbacks == 0


def _scale_by_1e30(x):
    x *= np.float32(1e30)


def _int_mod(x, y):
    x %= y
    return x


@pytest.mark.parametrize("fn, make", [
    (_scale_by_1e30, lambda: (np.array([1e10, 1.0], np.float32),)),
    (_int_mod, lambda: (np.array([7, 8, 9]), np.array([2, 0, 4]))),
], ids=["overflow", "integer modulo by zero"])
def test_a_first_call_raising_inside_an_update_leaves_the_arguments_as_numpy(fn, make):
    """Under ``np.errstate(...="raise")`` NumPy writes an in-place result, then raises: the
    first call (the capture, which computes the update as a new array) leaves the caller's
    arguments as NumPy does, on every call while no version exists (found by a probe)."""
    cf = stax.compile(fn)
    for _ in range(2):
        got, want = make(), make()
        with np.errstate(all="raise"):
            with pytest.raises(FloatingPointError):
                fn(*want)
            with pytest.raises(FloatingPointError):
                cf(*got)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
