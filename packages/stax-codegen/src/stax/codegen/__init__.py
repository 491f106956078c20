"""stax.codegen — scheduling, fusion and LLVM code generation for the CPU (spec §7–8)."""

from .artifact import KERNELS_SCHEMA, BufferPlan, KernelArtifact, KernelPlan, load_artifact
from .block_pool import default_block_pool
from .cpu.target import cpu_target
from .devices import DEVICES, target_for
from .diskcache import DiskCache
from .executable import Executable, ExternResultMismatch, FloatingPointEvents, InputMismatch
from .generate import CodegenOptions, generate
from .scheduler import FusionDecision, schedule
from .target import Identity, NumericLimits, Target
from .version import CODEGEN_VERSION

__version__ = "0.1.0"

__all__ = [
    "CODEGEN_VERSION", "DEVICES", "KERNELS_SCHEMA", "BufferPlan", "CodegenOptions", "DiskCache", "Executable",
    "ExternResultMismatch", "FloatingPointEvents", "FusionDecision", "Identity", "InputMismatch",
    "KernelArtifact", "KernelPlan", "NumericLimits", "Target",
    "cpu_target", "default_block_pool", "generate", "load_artifact", "schedule", "target_for",
]
