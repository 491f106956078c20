"""stax.codegen — scheduling, fusion and code generation: LLVM for the CPU, Triton for CUDA
(spec §7–9)."""

from .artifact import KERNELS_SCHEMA, BufferPlan, KernelArtifact, KernelPlan, load_artifact
from .block_pool import default_block_pool
from .cpu.target import cpu_target
from .devices import DEVICES, target_for
from .diskcache import DiskCache
from .executable import Executable, ExternResultMismatch, FloatingPointEvents, InputMismatch
from .generate import CodegenOptions, generate
from .scheduler import FusionDecision, schedule
from .target import Identity, NumericLimits, Target
from .triton.executable import TritonExecutable
from .triton.generate import generate_triton
from .triton.target import triton_target
from .version import CODEGEN_VERSION

__version__ = "0.1.0"

__all__ = [
    "CODEGEN_VERSION", "DEVICES", "KERNELS_SCHEMA", "BufferPlan", "CodegenOptions", "DiskCache", "Executable",
    "ExternResultMismatch", "FloatingPointEvents", "FusionDecision", "Identity", "InputMismatch",
    "KernelArtifact", "KernelPlan", "NumericLimits", "Target", "TritonExecutable",
    "cpu_target", "default_block_pool", "generate", "generate_triton", "load_artifact", "schedule",
    "target_for", "triton_target",
]
