"""The vector width kernels are tuned for (``cpu/vector_width.py``): decided once per process
(``STAX_VECTOR_WIDTH``, LLVM's own tuning, or a measurement of both widths), written into the
host's feature string, followed by the code LLVM makes, printed in the plan's header; the vector
math keeps its accuracy on 256-bit vectors as on 512-bit ones."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stax.codegen.cpu import host, vector_width
from stax.codegen.target import Identity

HERE = Path(__file__).parent
AVX512 = host.host_identity().has("avx512f")


def test_the_feature_string_says_the_width():
    features = "+avx2,+avx512f,+fma"
    narrow = vector_width.with_width(features, 256)
    assert narrow == "+avx2,+avx512f,+fma,+prefer-256-bit"
    assert vector_width.with_width(narrow, 512) == "+avx2,+avx512f,+fma,-prefer-256-bit"
    assert Identity("cpu", "x86_64", "any", narrow).tuned_bits == 256
    assert Identity("cpu", "x86_64", "any", vector_width.with_width(narrow, 512)).tuned_bits == 512
    assert Identity("cpu", "x86_64", "any", "+avx,+avx2,+prefer-256-bit").tuned_bits == 256
    assert Identity("cpu", "x86_64", "any", "+sse2").tuned_bits == 128


def test_how_the_width_is_decided(monkeypatch):
    llvm = host.llvm()
    triple, cpu = llvm.get_process_triple(), llvm.get_host_cpu_name()
    monkeypatch.setenv(vector_width.ENVIRONMENT, "256")
    assert vector_width.choose(llvm, triple, cpu, "+avx512f") == (256, "STAX_VECTOR_WIDTH=256")
    monkeypatch.delenv(vector_width.ENVIRONMENT)
    assert vector_width.choose(llvm, triple, cpu, "+avx2,-avx512f")[0] == 0
    # 256-bit vectors only when clearly faster: a near tie must not flip between processes
    close = {256: {"a": 0.95, "b": 1.0}, 512: {"a": 1.0, "b": 1.0}}
    clear = {256: {"a": 0.5, "b": 1.0}, 512: {"a": 1.0, "b": 1.0}}
    assert vector_width.decide(close) == 512 and vector_width.decide(clear) == 256


def test_the_decision_is_recorded_once_per_machine(monkeypatch, tmp_path):
    """A decision is read back by the next process (a warm start compiles no probe), per
    machine: another CPU name or feature string is another record; a damaged record is
    decided again; ``STAX_VECTOR_WIDTH`` is never recorded."""
    llvm = host.llvm()
    triple, cpu = llvm.get_process_triple(), llvm.get_host_cpu_name()
    monkeypatch.delenv(vector_width.ENVIRONMENT, raising=False)
    made = []

    def choose(*args):
        made.append(args)
        return 256, "measured (made up)"

    monkeypatch.setattr(vector_width, "choose", choose)
    features = "+avx2,+avx512f"
    assert vector_width.recorded(llvm, triple, cpu, features, tmp_path) == \
        (256, "measured (made up)")
    assert vector_width.recorded(llvm, triple, cpu, features, tmp_path) == \
        (256, "measured (made up) (recorded)")
    assert len(made) == 1
    vector_width.recorded(llvm, triple, "othercpu", features, tmp_path)
    vector_width.recorded(llvm, triple, cpu, features + ",+amx-tile", tmp_path)
    assert len(made) == 3
    records = list((tmp_path / "host").rglob("*.json"))
    assert len(records) == 3
    for record in records:
        record.write_bytes(record.read_bytes()[:-3] + b"xyz")  # damaged: a miss, decided again
    vector_width.recorded(llvm, triple, cpu, features, tmp_path)
    assert len(made) == 4
    monkeypatch.setenv(vector_width.ENVIRONMENT, "512")
    monkeypatch.setattr(vector_width, "choose", lambda *a: (512, "STAX_VECTOR_WIDTH=512"))
    assert vector_width.recorded(llvm, triple, cpu, features, tmp_path)[1] == \
        "STAX_VECTOR_WIDTH=512"
    assert vector_width.recorded(llvm, triple, cpu, features, None)[1] == \
        "STAX_VECTOR_WIDTH=512"


@pytest.mark.skipif(not AVX512, reason="the host has one vector width")
def test_the_probes_time_both_widths():
    llvm = host.llvm()
    machine = vector_width._machine_factory(llvm, llvm.get_process_triple(),
                                            llvm.get_host_cpu_name())
    features = llvm.get_host_cpu_features().flatten()
    times = vector_width._time_probes(
        llvm, {bits: machine(vector_width.with_width(features, bits)) for bits in (256, 512)})
    for bits in (256, 512):
        assert set(times[bits]) == {name for name, _, _ in vector_width.PROBES}
        assert all(0 < t < 0.01 for t in times[bits].values())
    bits, why = host.vector_choice()
    assert bits in (256, 512) and why
    assert host.host_identity().tuned_bits == bits


KERNEL = textwrap.dedent("""
    import numpy as np
    from stax.codegen import Executable, generate
    from stax.codegen.cpu.jit import _optimized_module, _target_machine
    from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, TensorMeta, tree_flatten
    from stax.loop import lower_opgraph

    x = np.linspace(-5, 5, 4096, dtype=np.float32)
    g = Graph("op")
    node = g.placeholder("x", {"tensor": TensorMeta.of(x)})
    out = g.call_function("exp", (node,), {}, meta={"tensor": TensorMeta.of(x)})
    g.output((out,))
    program = GraphProgram(OPGRAPH_SCHEMA, "probe", g, ["x"], tree_flatten(((x,), {}))[1],
                           tree_flatten((out,))[1])
    artifact = generate(lower_opgraph(program))
    asm = _target_machine().emit_assembly(_optimized_module(artifact.llvm_ir))
    (got,) = Executable(artifact)(x)
    assert np.allclose(got, np.exp(x), rtol=1e-6)
    print(str(artifact).splitlines()[0])
    print("zmm" in asm, "ymm" in asm)
""")


@pytest.mark.skipif(not AVX512, reason="the host has one vector width")
@pytest.mark.parametrize("bits", [256, 512])
def test_kernels_follow_the_width(bits):
    env = {**os.environ, vector_width.ENVIRONMENT: str(bits), "STAX_CACHE_DIR": "off"}
    done = subprocess.run([sys.executable, "-c", KERNEL], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    header, registers = done.stdout.splitlines()
    assert f", {bits}-bit vectors, " in header, header
    assert registers == ("True True" if bits == 512 else "False True")


@pytest.mark.skipif(not AVX512, reason="the host has one vector width")
def test_vector_math_keeps_its_bounds_on_256_bit_vectors():
    """The ulp bounds and special values of the float32 and float64 functions, on ymm."""
    env = {**os.environ, vector_width.ENVIRONMENT: "256", "STAX_CACHE_DIR": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(HERE / "test_vmath.py"), str(HERE / "test_vmath64.py"),
         "-k", "ulp_bound or special_values or within_one_ulp"],
        env=env, capture_output=True, text=True, timeout=900, cwd=HERE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
