"""Regenerate the kernel snapshots of the other instruction set than this host's.

``packages/stax-codegen/tests/test_snapshots.py`` keeps each snapshot per instruction set
(``.avx512.txt``, ``.avx2.txt``) and checks the host's own; a codegen change made on an AVX2 host
would leave the AVX-512 snapshots stale until CI ran on such a host, and the other way round.
Snapshots are LLVM IR only (nothing is compiled for, or run on, the faked CPU), so this host can
write them: LLVM's host queries are answered as the other CPU (``znver4``, AVX-512 on; or
``znver3``, AVX-512 off) before Stax asks them, and an AVX-512 CPU's vector width is given
(``STAX_VECTOR_WIDTH``). Checked faithful: on an AVX2 host it rewrote the committed AVX-512
snapshots byte for byte before a change.

    python tools/other_isa_snapshots.py            # rewrite the other set's snapshots
    python tools/other_isa_snapshots.py --check    # compare only (exit 1 on a difference)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import llvmlite.binding as llvm

#: the AVX-512 features a faked AVX-512 CPU turns on (those the host's string names as off)
AVX512 = frozenset({"avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512cd", "avx512vbmi",
                    "avx512vbmi2", "avx512vnni", "avx512bf16", "avx512ifma", "avx512vpopcntdq",
                    "avx512bitalg", "evex512"})
SNAPSHOT_TESTS = Path(__file__).resolve().parent.parent / "packages" / "stax-codegen" / "tests" \
    / "test_snapshots.py"


class _Features:
    def __init__(self, text: str) -> None:
        self.text = text

    def flatten(self) -> str:
        return self.text


def fake_host() -> str:
    """Answer LLVM's host queries as the other instruction set's CPU; returns its name."""
    host = llvm.get_host_cpu_features().flatten().split(",")
    has_avx512 = "+avx512f" in host
    sign = "-" if has_avx512 else "+"
    features = [sign + f[1:] if f[1:] in AVX512 else f for f in host]
    cpu = "znver3" if has_avx512 else "znver4"
    llvm.get_host_cpu_features = lambda: _Features(",".join(features))
    llvm.get_host_cpu_name = lambda: cpu
    if not has_avx512:  # (an AVX2 CPU has one width: nothing to give)
        os.environ["STAX_VECTOR_WIDTH"] = "512"
    return cpu


def main(argv: list[str]) -> int:
    check = "--check" in argv
    print(f"snapshots as {fake_host()}", file=sys.stderr)
    os.environ["STAX_CACHE_DIR"] = "off"
    if not check:
        os.environ["STAX_UPDATE_SNAPSHOTS"] = "1"
    import pytest
    return pytest.main(["-q", "-p", "no:cacheprovider", str(SNAPSHOT_TESTS)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
