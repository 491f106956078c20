"""Size-generic Triton kernels (issue 15, item 4's GPU half), in Triton's interpreter: a capture
made generic in its rows is lowered for CUDA and generated once; its kernels take the size
symbols as arguments after their pointers (``KernelPlan.size_args``) and their grids are size
expressions, so one Triton source runs at every size through ``instantiate`` (the grid and
buffers at that size) and ``TritonExecutable(..., sizes=...)``; device calls take the generic
version through automatic dynamic as CPU calls do."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import stax.runtime as stax  # noqa: E402
from stax.codegen.instantiate import instantiate  # noqa: E402
from stax.codegen.triton.executable import TritonExecutable  # noqa: E402
from stax.codegen.triton.generate import generate_triton  # noqa: E402
from stax.codegen.triton.target import triton_target  # noqa: E402
from stax.ir import CAPTURE_SCHEMA, GraphProgram  # noqa: E402
from stax.ir.shape_env import ShapeEnv  # noqa: E402
from stax.ir.sizes import shape_env  # noqa: E402
from stax.ir.symbolic_shapes import symbolize  # noqa: E402
from stax.ir.to_opgraph import lower_capture  # noqa: E402
from stax.loop import lower_opgraph  # noqa: E402
from stax.trace import trace  # noqa: E402

pytestmark = pytest.mark.skipif(not triton.knobs.runtime.interpret,
                                reason="Triton was imported before TRITON_INTERPRET=1 was set")


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, w):
    mu = x.mean(axis=-1, keepdims=True)
    v = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * w


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def scaled(x):
    return x * 2.0 + 1.0


WIDTH = 40
W = np.random.default_rng(1).standard_normal(WIDTH).astype(np.float32)
PROGRAMS = {"softmax": (softmax, ()), "layer_norm": (layer_norm, (W,)),
            "example_1_1": (example_1_1, (W,)), "scaled": (scaled, ())}


def _generic_artifact(fn, extra, dims):
    x = np.ones((7, WIDTH), np.float32)
    program = GraphProgram.from_json(trace(fn, (x, *extra)).to_json(), CAPTURE_SCHEMA)
    env = ShapeEnv()
    with shape_env(env):
        assert symbolize(program, dims, env) is None
        target = triton_target()
        loop = lower_opgraph(lower_capture(program), materialize=target.materialize,
                             options=target.loop_options)
        artifact = generate_triton(loop, target=target)
    return artifact, env


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_one_triton_source_runs_at_every_batch_size(name):
    fn, extra = PROGRAMS[name]
    artifact, env = _generic_artifact(fn, extra, {0: [0]})
    assert any(k.size_args == ("s0",) for k in artifact.kernels)
    assert "s0, XBLOCK: tl.constexpr" in artifact.triton_source
    assert all(not g.expression.symbols or g.holds({"s0": 1}) for g in env.guards)
    for rows in (5, 1, 33, 130, 7):
        x = np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)
        x[0, :3] = [np.nan, np.inf, -0.0]
        instance = instantiate(artifact, {"s0": rows})
        assert instance.triton_source == artifact.triton_source  # one source, compiled once
        executable = TritonExecutable(instance, sizes={"s0": rows})
        got = executable(torch.from_numpy(x), *[torch.from_numpy(e) for e in extra])[0]
        with np.errstate(all="ignore"):
            want = fn(x, *extra)
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=2e-6)


def test_a_dynamic_inner_extent_loops_over_its_row():
    artifact, _ = _generic_artifact(softmax, (), {0: [0, 1]})
    assert "range(0, s1, R0_BLOCK)" in artifact.triton_source
    assert all(k.size_args == ("s0", "s1") for k in artifact.kernels)


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "example_1_1"])
def test_device_calls_take_the_generic_version_too(name):
    """Automatic dynamic for ``device="cuda"``: torch tensors of a stream of batch sizes compile
    twice, the second a size-generic Triton version (its instances share one source)."""
    fn, extra = PROGRAMS[name]
    f = stax.compile(fn, device="cuda")
    for rows in (5, 9, 33, 1, 130, 9):
        x = np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)
        got = f(torch.from_numpy(x), *[torch.from_numpy(e) for e in extra])
        assert isinstance(got, torch.Tensor)
        np.testing.assert_allclose(got.numpy(), fn(x, *extra), rtol=2e-6, atol=2e-6)
    assert f.cache_info().compiles == 2
    assert [v.generic is not None for v in f.versions()] == [False, True]


@pytest.mark.parametrize("name", ["softmax", "layer_norm_plain", "column_sums", "elementwise"])
def test_dynamic_true_on_the_device_makes_rows_and_columns_generic(name):
    """``dynamic=True``: a row's length is a size too; such phases loop over it (never
    persistent), a mean divides by the size converted in the kernel."""
    fns = {"softmax": softmax,
           "layer_norm_plain": lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(
               ((x - x.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + 1e-5),
           "column_sums": lambda x: x.sum(0) * 2,
           "elementwise": lambda x: np.tanh(x) * 2 + x}
    fn = fns[name]
    f = stax.compile(fn, device="cuda", dynamic=True)
    for rows, columns in ((5, 40), (9, 7), (1, 130), (9, 2048), (3, 5000), (5, 40)):
        x = np.random.default_rng(rows * columns).standard_normal((rows, columns))
        x = x.astype(np.float32)
        np.testing.assert_allclose(f(torch.from_numpy(x)).numpy(), fn(x), rtol=2e-6, atol=2e-6)
    assert f.cache_info().compiles == 1 and f.versions()[0].generic is not None


def test_the_golden_1_10_document_runs_at_every_row_count():
    """The size-generic CUDA kernels document (``make_fixtures.py --sizes``): read back, one
    instance per call's sizes, each NumPy's softmax on Triton's interpreter."""
    from pathlib import Path

    from stax.codegen import load_artifact
    from stax.codegen.instantiate import GenericExecutable

    fixture = Path(__file__).parent / "fixtures" / "row_softmax.cuda.kernels.schema-1.10.json"
    generic = GenericExecutable(load_artifact(fixture))
    for rows in (1, 6, 65, 200):
        x = np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)
        x[0, :2] = [np.inf, -0.0]
        got, = generic(torch.from_numpy(x))
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(got.numpy(), softmax(x), rtol=2e-6, atol=2e-7)


def test_scalar_arguments_are_device_inputs_of_a_generic_version():
    """Spec example 2.1 on the device: a changing Python scalar is a run-time input of one
    version, a 0-d tensor filled on the inputs' device each call (``ArrayLibrary.scalar``),
    weak as NumPy takes it (float32 arithmetic); with the rows dynamic too, still one version."""
    def g(x, k):
        return np.maximum(x * k, 0.5) + k

    f = stax.compile(g, device="cuda", strict_native=True)
    x = np.random.default_rng(0).standard_normal((37, WIDTH)).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    for k in (3.0, 4.0, 5.5, -2.25, 0.1, 1e39):
        got = f(torch.from_numpy(x), k)
        assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got.numpy(), g(x, k))
    assert f.cache_info().compiles == 2
    assert [v.generic is not None for v in f.versions()] == [False, True]

    h = stax.compile(g, device="cuda", strict_native=True)
    for rows, k in ((5, 2.0), (9, 3.5), (33, -1.0), (130, 0.25), (9, 8.0)):
        x = np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)
        np.testing.assert_array_equal(h(torch.from_numpy(x), k).numpy(), g(x, k))
    assert h.cache_info().compiles == 2


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod", "mean", "any", "int_max"])
def test_column_reductions_over_dynamic_rows_split_in_ragged_slices(name):
    """A column reduction over a dynamic row count is split in slices of a fixed length, as
    many as each size needs (``split.py``): the last slice's rows past the end are not read
    and count as the reduction's identity; a NaN in any slice is the column's NaN."""
    fns = {"sum": lambda x: x.sum(0), "max": lambda x: x.max(0), "min": lambda x: x.min(0),
           "prod": lambda x: (1 + x * 1e-3).prod(0), "mean": lambda x: x.mean(0) * 2,
           "any": lambda x: (x > 2.5).any(0), "int_max": lambda x: (x * 100).astype(np.int32).max(0)}
    fn = fns[name]
    f = stax.compile(fn, device="cuda", strict_native=True)
    for rows in (5, 9, 1, 127, 128, 129, 300):
        x = np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)
        if rows > 100:
            x[rows - 1, 3], x[0, 4], x[rows // 2, 5] = np.nan, -0.0, np.inf
        got = f(torch.from_numpy(x)).numpy()
        with np.errstate(all="ignore"):  # float32 sums in another order: within rows * eps
            np.testing.assert_allclose(got, fn(x), rtol=2e-6, atol=1e-7 * rows,
                                       equal_nan=True)
    assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None
    if name not in ("mean", "any"):  # (those two take another nest: rows, plain)
        buffers = [b.name for b in f.versions()[1].artifact.buffers]
        assert any(b.endswith("_part") for b in buffers), buffers


DEVICE_RULES = {
    "roll_rows": lambda x: np.roll(x, 2, axis=0) - x,
    "roll_back": lambda x: np.roll(x, -3, axis=0) * 2,
    "roll_flat": lambda x: np.roll(x, 3) + 1,
    "trace": lambda x: np.trace(x[:, :6]) + x,
    "diagonal": lambda x: np.diagonal(x[:, :6]) + 1,
    "repeat": lambda x: np.repeat(x, 2, axis=0) * 2,
    "linspace": lambda x: x * np.linspace(0, 1, x.shape[0])[:, None],
}


@pytest.mark.parametrize("name", sorted(DEVICE_RULES))
def test_library_calls_with_size_rules_are_generic_on_the_device(name):
    """Size rules of library calls (``size_rules_library.py``) and a roll along a dynamic
    axis (its start a guard, a flattened one read at size expressions) on Triton kernels."""
    fn = DEVICE_RULES[name]
    f = stax.compile(fn, device="cuda", strict_native=True)
    for rows in (9, 13, 22, 10, 30):
        x = np.random.default_rng(rows).standard_normal((rows, 8))
        got = f(torch.from_numpy(x))
        assert tuple(got.shape) == fn(x).shape
        np.testing.assert_allclose(got.numpy(), fn(x), rtol=1e-12, atol=1e-12)
    assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None
