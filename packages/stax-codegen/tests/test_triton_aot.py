"""Every kind of kernel the Triton emitter makes compiles ahead of time for an H100/H200
(``GPUTarget("cuda", 90, 32)``) to PTX and cubin, without a GPU, with the options the executable
launches it with; and the PTX rounds as NumPy does: float32 division and square root correctly
rounded, no multiply-add of the kernel's own arithmetic contracted into an FMA (which Triton 3.9
does by default; libdevice's functions use FMAs inside, by design).

Run in a subprocess: the kernels must be real Triton functions, not the interpreter's (another
test module of the session sets ``TRITON_INTERPRET=1``)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("triton")

SCRIPT = textwrap.dedent("""
    import json, re, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from conftest import OpBuilder
    import os
    os.environ.pop("TRITON_INTERPRET", None)  # conftest sets it for the in-process tests
    from stax.codegen import generate_triton, triton_target
    from stax.codegen.triton.aot import compile_ahead
    from stax.codegen.triton.launch import LaunchPolicy
    from stax.ir.passes import decompose_to_basis
    from stax.loop import lower_opgraph

    def artifact(builder, *outputs, policy=None):
        target = triton_target()
        program = builder.program(*outputs)
        decompose_to_basis(program.graph, basis=target.basis)
        loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
        return generate_triton(loop, target, policy=policy)

    looped = LaunchPolicy(block_elements=256, max_persistent=16, looped_r0_block=16)
    cases = {}
    f32 = np.ones((64, 128), np.float32)
    b = OpBuilder(x=f32, w=f32.copy())
    cases["example_1_1"] = artifact(b, b("sum", b("mul", b("maximum", b("add", b.inputs["x"],
        b.inputs["w"]), 0), 2), axis=(1,), keepdims=False, dtype="float32"))
    b = OpBuilder(x=f32, w=f32.copy())
    cases["axpy_div_sqrt"] = artifact(b, b("add", b("mul", b.inputs["x"], b.inputs["w"]),
        b("truediv", b("sqrt", b.inputs["x"]), b.inputs["w"])))
    b = OpBuilder(x=f32)
    cases["scans"] = artifact(b, b("cumsum", b.inputs["x"], axis=1, dtype="float32"),
        b("cumprod", b.inputs["x"], axis=0, dtype="float32"), policy=looped)
    for name, policy in (("softmax", None), ("softmax_looped", looped)):
        b = OpBuilder(x=f32)
        top = b("max", b.inputs["x"], axis=(1,), keepdims=True)
        e = b("exp", b("sub", b.inputs["x"], top))
        cases[name] = artifact(b, b("truediv", e, b("sum", e, axis=(1,), keepdims=True,
                                                         dtype="float32")), policy=policy)
    f64 = np.ones((8, 40), np.float64)
    b = OpBuilder(x=f64, y=f64.copy())
    x, y = b.inputs["x"], b.inputs["y"]
    cases["float64_functions"] = artifact(b, *[b(op, x) for op in ("sin", "tanh", "log1p",
        "arccosh", "cbrt")], *[b(op, x, y) for op in ("pow", "arctan2", "hypot", "logaddexp")],
        b("argmax", x, axis=(1,), keepdims=False), policy=looped)
    i32 = np.ones((16, 24), np.int32)
    b = OpBuilder(x=i32, y=i32.copy())
    x, y = b.inputs["x"], b.inputs["y"]
    cases["integers"] = artifact(b, *[b(op, x, y) for op in ("floordiv", "mod", "left_shift",
        "right_shift")], b("bitwise_count", x), b("cast", x, dtype="uint64"),
        b("prod", x, axis=(0,), keepdims=False, dtype="int64"),
        b("any", b("gt", x, y), axis=(1,), keepdims=False))
    b = OpBuilder(x=np.ones((6, 20), np.float32), w=np.ones(20, np.float32),
                  bias=np.ones(20, np.float32))
    cases["layer_norm"] = artifact(b, b("layer_norm", b.inputs["x"], b.inputs["w"],
                                        b.inputs["bias"], normalized_ndim=1, eps=1e-5))
    report = {}
    for name, a in cases.items():
        for kernel, asm in compile_ahead(a).items():
            ptx = asm["ptx"]
            report[f"{name}.{kernel}"] = {
                "cubin": len(asm.get("cubin", b"")), "target": re.findall(r"\\.target (\\w+)", ptx),
                "fma": bool(re.search(r"\\bfma\\.rn\\.f32", ptx)),
                "inexact": re.findall(r"\\b(?:div\\.full|div\\.approx|sqrt\\.approx)\\.\\w+", ptx),
                "div_rn": "div.rn.f32" in ptx, "sqrt_rn": "sqrt.rn.f32" in ptx,
                "barrier": "bar.sync" in ptx or "barrier.sync" in ptx}
    fused = compile_ahead(cases["axpy_div_sqrt"], options={"enable_fp_fusion": True})
    report["fused"] = bool(re.search(r"\\bfma\\.rn\\.f32", fused["kernel_0"]["ptx"]))
    print(json.dumps(report))
""")


@pytest.mark.slow
def test_every_kind_of_kernel_compiles_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    fused = report.pop("fused")
    kernels = set(report)
    assert {"example_1_1.kernel_0", "softmax.kernel_0", "softmax_looped.kernel_0",
            "float64_functions.kernel_0", "integers.kernel_0", "layer_norm.kernel_0",
            "scans.kernel_0", "scans.kernel_1"} <= kernels
    for name, found in report.items():
        assert found["cubin"] > 0 and found["target"] == ["sm_90a"], name
        assert not found["inexact"], (name, found)
        if "functions" not in name and "softmax" not in name:  # libdevice's own code uses FMAs
            assert not found["fma"], (name, found)
    assert report["axpy_div_sqrt.kernel_0"]["div_rn"] and report["axpy_div_sqrt.kernel_0"]["sqrt_rn"]
    assert report["softmax.kernel_0"]["div_rn"]
    assert report["softmax_looped.kernel_0"]["barrier"]  # tl.debug_barrier() (reductions sync too)
    assert fused  # the launch options are what keeps a * b + c two roundings
