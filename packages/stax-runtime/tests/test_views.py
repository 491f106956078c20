"""Views read natively as affine maps of their operand's memory (spec §6: views are affine index
maps), while returned views stay NumPy views."""

import numpy as np
import pytest

import stax.runtime as stax

PROGRAMS = {
    "transpose": lambda x: (x.T + 1) * 2,
    "slices": lambda x: x[1:, ::2] * 3,
    "reversed column": lambda x: x[::-1, 3] + x[:, 0],
    "reshape": lambda x: x.reshape(4, 12).sum(-1),
    "broadcast_to": lambda x: np.broadcast_to(x[:1], (6, 8)) + x,
    "expand_dims": lambda x: np.expand_dims(x, 1)[:, 0, :] - x,
    "swapaxes": lambda x: np.swapaxes(x, 0, 1).max(0),
    "view of a computed value": lambda x: (x * 2).T.sum(0),
    "reshape of a computed value": lambda x: (x + 1).reshape(48)[5:20] * 2,
}


@pytest.mark.parametrize("layout", ["C", "F", "reversed"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_views_compile_natively(name, layout):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    x = {"C": x, "F": np.asfortranarray(x), "reversed": x[:, ::-1]}[layout]
    fn = PROGRAMS[name]
    cf = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_allclose(cf(x), fn(x), rtol=1e-6)
    externs = [e.target for e in cf.versions()[0].artifact.externs]
    copies = layout != "C" and "reshape" in name  # NumPy copies there: no view to read
    assert externs == [] or copies, externs
    assert cf.cache_info().fallbacks == 0


def test_returned_views_and_views_fed_to_numpy_stay_views():
    x = np.arange(12.0).reshape(3, 4)
    cf = stax.compile(lambda x: (x.T, np.sin(x.T[1:])), strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        t, s = cf(x)
        assert np.shares_memory(t, x)
        np.testing.assert_array_equal(s, np.sin(x.T[1:]))


def test_an_update_by_an_overlapping_view_compiles_natively():
    """``b[1:] += b[:-1]`` (a local array or an argument): NumPy reads the overlapping operand
    before it writes; compiled, with the argument's final value written back."""
    def local(x):
        b = x * 2
        b[1:] += b[:-1]
        b[:-1] -= b[1:]
        return b

    def argument(x):
        x[1:] += x[:-1]
        return x.sum()

    for fn in (local, argument):
        compiled = stax.compile(fn, strict_native=True)
        for n in (1, 2, 5, 1000):  # 1: b[1:] is an empty view
            x = np.random.default_rng(n).standard_normal(n)
            got_arg, want_arg = x.copy(), x.copy()
            # (a float sum's order is not NumPy's pairwise one: its last bits may differ)
            np.testing.assert_allclose(compiled(got_arg), fn(want_arg), rtol=1e-13)
            np.testing.assert_array_equal(got_arg, want_arg)
        assert compiled.cache_info().fallbacks == 0
