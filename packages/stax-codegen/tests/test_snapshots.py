"""A snapshot corpus of generated kernels (STYLE.md habit 10): a codegen change shows up as a
reviewable diff of these files. Regenerate with ``STAX_UPDATE_SNAPSHOTS=1 pytest ...``.

Code generation follows the host's features (AVX-512's ``vscalef`` scales exp's result where an
AVX2 host takes integer arithmetic), so each snapshot is kept per instruction set: its name ends
in ``.avx512`` or ``.avx2``, and a change shows on the hosts of that set. ``python
tools/other_isa_snapshots.py`` rewrites (or ``--check``s) the other set's on a host of one."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from stax.codegen import generate, target_for
from stax.loop import lower_opgraph

SNAPSHOTS = Path(__file__).parent / "snapshots"


def example_1_1(b):
    return b("sum", b("mul", b("maximum", b("add", b.inputs["x"], b.inputs["w"]), 0), 2),
             axis=(1,), keepdims=False, dtype="float32")


def softmax_rows(b):
    x = b.inputs["x"]
    m = b("max", x, axis=(1,), keepdims=True)
    e = b("exp", b("sub", x, m))
    return b("truediv", e, b("sum", e, axis=(1,), keepdims=True, dtype="float32"))


def integer_mix(b):
    return b("where", b("gt", b.inputs["x"], 0), b("neg", b.inputs["x"]), b.inputs["w"])


def argmax_cols(b):
    return b("argmax", b.inputs["x"], axis=(0,), keepdims=False)


CORPUS = {
    "example_1_1": (example_1_1, np.float32),
    "softmax_rows": (softmax_rows, np.float32),
    "integer_mix": (integer_mix, np.int32),
    "argmax_cols": (argmax_cols, np.float64),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_generated_kernels_match_the_snapshot(name, build):
    make, dtype = CORPUS[name]
    x = np.ones((8, 16), dtype)
    b = build(x=x, w=x)
    artifact = generate(lower_opgraph(b.program(make(b))))
    body = artifact.llvm_ir.split("\n", 3)[-1]  # without the module header (triple, name)
    text = f"{artifact}\n\n{body}".replace(artifact.target.get("cpu", ""), "<cpu>")
    text = re.sub(r", \d+-bit vectors", "", text, count=1)  # the host's width (vector_width.py)
    # and where it splits kernels over threads (parallel_work.py)
    text = re.sub(r", kernels of \d+ cost units and more split over the thread pool", "", text,
                  count=1)
    isa = "avx512" if target_for("cpu").identity.has("avx512f") else "avx2"
    path = SNAPSHOTS / f"{name}.{isa}.txt"
    if os.environ.get("STAX_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(text)
    assert path.read_text() == text, f"codegen changed {name}: review, then update the snapshot"
