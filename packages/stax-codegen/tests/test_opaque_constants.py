"""An infinity the kernels keep opaque (``em.opaque``: an empty asm LLVM cannot fold through) is
no constant the optimizer made: the fast module stays the fast one (``jit.folded_non_finite``).
LLVM writes such a call ``tail call``; taken for a new instruction, the infinity of every complex
``abs`` sent its programs to the precise kernels (spectrum_db, complex_poly_residual: 2-4x
slower)."""

import numpy as np

from stax.codegen import Executable
from stax.codegen.cpu.jit import folded_non_finite


def test_a_tail_call_is_the_sources_call():
    before = '  %".7" = call double asm  "", "=x,0"(double 0x7ff0000000000000) nounwind readnone'
    after = '  %.7 = tail call double asm "", "=x,0"(double 0x7FF0000000000000) #5'
    assert folded_non_finite(before, after) == []
    assert folded_non_finite(before, after + "\n  store double 0x7FF0000000000000, ptr %p") == \
        ["0x7FF0000000000000"]


def test_complex_magnitudes_keep_the_fast_module(build, run):
    rng = np.random.default_rng(3)
    z = rng.standard_normal(1000) + 1j * rng.standard_normal(1000)
    z[::97] = complex(np.inf, np.nan)
    b = build(z=z)
    out = b("abs", b.inputs["z"])
    (got,), artifact = run(b, out)
    np.testing.assert_array_equal(got, b.expected(out)[0])
    assert artifact.precise_ir is not None  # the fast kernels report events: a precise module
    assert Executable(artifact).module.folded == []
