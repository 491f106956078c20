"""The golden ``stax.kernels/1.10`` document (``tools/make_fixtures.py --sizes``): a
size-generic CUDA plan, a row softmax with rows dynamic. Its Triton kernels take the size
symbols after their pointers (``size_args``) and its launch grids are size expressions; it reads
back to the same document and gives a launch grid per size. (Running it: the runtime's
``test_schema_1_10.py``, on Triton's interpreter.)"""

import json
from pathlib import Path

from stax.codegen import load_artifact
from stax.codegen.artifact import SIZED_TRITON_KERNELS_SCHEMA, TRITON_KERNELS_SCHEMA
from stax.codegen.instantiate import instantiate
from stax.ir.sizes import Size

FIXTURES = Path(__file__).parent / "fixtures"
KERNELS = FIXTURES / "row_softmax.cuda.kernels.schema-1.10.json"


def test_the_1_10_document_reads_back_with_size_arguments_and_grids():
    doc = json.loads(KERNELS.read_text())
    assert doc["schema"] == SIZED_TRITON_KERNELS_SCHEMA == "stax.kernels/1.10"
    artifact = load_artifact(KERNELS)
    assert artifact.to_json() == doc
    kernel, = artifact.kernels
    assert kernel.size_args == ("s0",)
    assert isinstance(kernel.launch.grid[0], Size)
    assert "s0, XBLOCK: tl.constexpr" in artifact.triton_source


def test_an_instance_of_the_1_10_plan_has_its_grid_at_the_call_sizes():
    artifact = load_artifact(KERNELS)
    block = dict(artifact.kernels[0].launch.blocks)["XBLOCK"]
    for rows in (1, 63, 64, 65, 10_000):
        grid = instantiate(artifact, {"s0": rows}).kernels[0].launch.grid
        assert grid == (-(-rows // block),)


def test_a_triton_plan_without_sizes_keeps_declaring_1_5():
    doc = json.loads((FIXTURES / "cuda_kernels.kernels.schema-1.5.json").read_text())
    assert load_artifact(doc).schema == TRITON_KERNELS_SCHEMA == "stax.kernels/1.5"
