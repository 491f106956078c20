"""A value no step stores (held in a row kernel's registers, computed for its events only) gets
no memory in a call (``KernelArtifact.unstored``): allocated anyway, a softmax's 1.5 MB of
unstored exponentials pushed the heap past glibc's trim threshold, and every call faulted its
result's pages in again (650 -> 250 us on (4000, 48) float64 after another program ran)."""

import numpy as np

import stax.runtime as stax
from stax.codegen import Executable


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_a_value_no_step_stores_gets_no_memory():
    x = np.random.default_rng(5).standard_normal((400, 48))
    compiled = stax.compile(softmax, strict_native=True)
    for _ in range(2):  # the capture's run, then the compiled version's (machine-code entry)
        np.testing.assert_allclose(compiled(x), softmax(x), rtol=1e-13)
    artifact = compiled.versions()[-1].artifact
    unstored = artifact.unstored
    assert unstored and not unstored & {a for k in artifact.kernels for a in k.args}
    executable = Executable(artifact)  # the Python call plan too
    assert not unstored & set(executable._call_plan(parallel=False, native=False).slot)
    (got,) = executable(x)
    np.testing.assert_allclose(got, softmax(x), rtol=1e-13)
