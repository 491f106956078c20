"""Prints, after the benchmark table, one summary measured in this run: every implementation's
median per case, its speedup over eager NumPy, Stax against the fastest peer, and the bandwidth
achieved on each case's minimal traffic against the copy/triad bandwidth of this machine."""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # `import peers` from the benchmark modules

from corpus.summary import PREFIX as CORPUS
from corpus.summary import corpus_lines

MEDIANS: dict[str, dict[str, float]] = defaultdict(dict)
TRAFFIC: dict[str, int] = {}
BANDWIDTH: dict[str, float] = {}
NOTES: list[str] = []
#: how each implementation ran each corpus program, or why it was not timed
STATUS: dict[str, dict[str, str]] = defaultdict(dict)
PEERS = ("numexpr", "numba", "jax")  # the bar: faster than the fastest of these
IMPL_ORDER = ("numpy", "numexpr", "numba", "jax", "torch", "stax")
ROOFLINE_CASES = ("softmax(4096,4096)", "layer_norm(8192,1024)", "gelu(16M)")
#: case -> impl -> peak memory of one call, bytes (``peak_memory``)
MEMORY: dict[str, dict[str, int]] = defaultdict(dict)
#: the peers of gradient cases (issue 16's bar: faster than both, memory not above either)
GRADIENT_PEERS = ("jax", "torch")


@pytest.fixture
def record():
    def save(case: str, impl: str, benchmark) -> None:
        MEDIANS[case][impl] = benchmark.stats.stats.median
    return save


def _status_kib() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            fields[line.split(":")[0]] = int(line.split()[1])
    return fields


class PeakMemory:
    """``start()`` once the case's data exist, before the implementation's first call (its
    compile included); ``measure(case, impl, call)`` after the warm-up runs ``call`` once and
    records the process's resident high-water mark during it (reset first through
    ``/proc/self/clear_refs``) above the resident size at ``start``. So memory an
    implementation keeps between calls counts (Stax's block pool for large intermediates,
    XLA's allocator), and so do native allocations tracemalloc would miss (XLA's, torch's).
    ``nox -s bench`` fixes glibc's mmap threshold so that freed blocks leave the resident set.
    Nothing recorded off Linux."""

    def __init__(self) -> None:
        self.baseline: int | None = None

    def start(self) -> None:
        try:
            self.baseline = _status_kib()["VmRSS"]
        except (OSError, KeyError):
            self.baseline = None

    def measure(self, case: str, impl: str, call) -> None:
        if self.baseline is None:
            return
        Path("/proc/self/clear_refs").write_text("5")
        call()
        MEMORY[case][impl] = (_status_kib()["VmHWM"] - self.baseline) * 1024


@pytest.fixture
def peak_memory():
    return PeakMemory()


@pytest.fixture
def status():
    """``status(case, impl, text)``: how ``impl`` ran the case (native, fallback and why, does not
    compile, a wrong result), for the corpus summary."""
    def save(case: str, impl: str, text: str) -> None:
        STATUS[case][impl] = text
    return save


@pytest.fixture
def traffic():
    """``traffic(case, nbytes)``: the bytes the case must move at least."""
    return TRAFFIC.__setitem__


@pytest.fixture
def bandwidth():
    def save(name: str, nbytes: int, benchmark) -> None:
        BANDWIDTH[name] = nbytes / benchmark.stats.stats.median
    return save


@pytest.fixture
def note():
    """``note(line)``: a line for the summary (measurements that are not timing rounds)."""
    return NOTES.append


def _dispatch_lines() -> list[str]:
    t = MEDIANS.get("dispatch", {})
    need = ("ufunc (8 elements)", "kernel call (no dispatch)", "level-1 hit",
            "level-1 hit (Python dispatcher)", "level-3 hit (keyword call)")
    if not all(k in t for k in need):
        return []
    ufunc, kernel = t[need[0]], t[need[1]]
    return [f"dispatch, in NumPy 8-element ufunc calls: a level-1 hit through the machine-code "
            f"entry, whole call (guard, allocation, kernel) {t[need[2]] / ufunc:.2f}x; overhead on "
            f"top of the Python-level kernel call: Python dispatcher level 1 "
            f"{(t[need[3]] - kernel) / ufunc:.1f}x (bar 8x), level 3 "
            f"{(t[need[4]] - kernel) / ufunc:.1f}x (bar 25x)"]


def _host_lines() -> list[str]:
    """The CPU every number was measured on, and the vector width Stax's kernels ran with."""
    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if
                  line.startswith("model name")), "unknown model")
    from stax.codegen.cpu.host import host_identity, vector_choice
    bits, why = vector_choice()
    width = f"{bits}-bit vectors ({why})" if bits else "the host's one vector width"
    return [f"host: {model}, {os.cpu_count()} CPUs, LLVM cpu {host_identity().cpu}; Stax "
            f"kernels on {width}"]


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def _experiment_lines() -> list[str]:
    lines = []
    for case, times in MEDIANS.items():
        if case.startswith("explicit vectors") and {"stax", "explicit"} <= set(times):
            lines.append(f"{case}: vectorizer {_time(times['stax'])}, explicit "
                         f"{_time(times['explicit'])} (explicit / vectorizer "
                         f"{times['explicit'] / times['stax']:.2f})")
    return lines


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} us"


def _workload_lines(peak: float | None) -> list[str]:
    lines = []
    for case, times in MEDIANS.items():
        if case in ("dispatch", "capture") or case.startswith(CORPUS):
            continue
        gradients = case in MEMORY
        if "numpy" not in times and not gradients:
            continue
        base = times.get("numpy")
        order = sorted(times, key=lambda impl: IMPL_ORDER.index(impl) if impl in IMPL_ORDER
                       else len(IMPL_ORDER))
        cells = [f"{impl} {_time(times[impl])}" + (f" ({base / times[impl]:.2f}x)" if base else "")
                 for impl in order]
        lines.append(f"{case}: " + ", ".join(cells))
        peers = GRADIENT_PEERS if gradients else PEERS
        peer_times = {impl: times[impl] for impl in peers if impl in times}
        stax = times.get("stax")
        if stax and peer_times:
            best = min(peer_times, key=peer_times.get)
            verdict = "faster" if stax < peer_times[best] else "SLOWER"
            lines.append(f"    stax vs fastest peer ({best}): {peer_times[best] / stax:.2f}x, {verdict}")
        if stax and case in TRAFFIC and peak:
            floor = TRAFFIC[case] / peak
            lines.append(f"    minimal traffic {TRAFFIC[case] / 2**20:.1f} MiB: stax achieves "
                         f"{TRAFFIC[case] / stax / 1e9:.1f} GB/s, {stax / floor:.2f}x the "
                         f"minimal-traffic time {_time(floor)}"
                         + (" (bar 1.5x)" if case in ROOFLINE_CASES else ""))
        if gradients:
            lines.append(_memory_line(MEMORY[case]))
    pow_, mul = MEDIANS.get("gelu_pow(16M)", {}).get("stax"), MEDIANS.get("gelu(16M)", {}).get("stax")
    if pow_ and mul:
        lines.append(f"gelu with x ** 3 / with x * x * x (stax): {pow_ / mul:.3f} (bar 1.05)")
    return lines


def _memory_line(memory: dict[str, int]) -> str:
    order = sorted(memory, key=lambda impl: IMPL_ORDER.index(impl) if impl in IMPL_ORDER
                   else len(IMPL_ORDER))
    cells = ", ".join(f"{impl} {memory[impl] / 2**20:.0f} MiB" for impl in order)
    peers = [memory[impl] for impl in GRADIENT_PEERS if impl in memory]
    verdict = ""
    if "stax" in memory and peers:
        verdict = "; stax " + ("at most" if memory["stax"] <= min(peers) else "ABOVE") + \
            " every peer's"
    return f"    peak memory of a step above the resident size before the first: {cells}{verdict}"


def _share_records() -> None:
    """With STAX_BENCH_RECORDS set (``nox -s bench`` runs each implementation in its own
    process), merge this process's records with the earlier processes' in that JSON file: the
    last process prints the summary of them all."""
    path = os.environ.get("STAX_BENCH_RECORDS")
    if not path:
        return
    earlier = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    # the best median of all processes (``nox -s bench`` runs every implementation twice): this
    # VM's speed drifts by up to 2x between minutes, and the faster round is the one less
    # disturbed
    for case, times in earlier.get("medians", {}).items():
        for impl, t in times.items():
            MEDIANS[case][impl] = min(t, MEDIANS[case].get(impl, t))
    for name, value in earlier.get("traffic", {}).items():
        TRAFFIC.setdefault(name, value)
    for name, value in earlier.get("bandwidth", {}).items():
        BANDWIDTH[name] = max(value, BANDWIDTH.get(name, value))
    NOTES[:0] = [n for n in earlier.get("notes", []) if n not in NOTES]
    for case, impls in earlier.get("memory", {}).items():
        for impl, nbytes in impls.items():
            MEMORY[case][impl] = min(nbytes, MEMORY[case].get(impl, nbytes))
    for case, impls in earlier.get("status", {}).items():
        for impl, text in impls.items():
            STATUS[case].setdefault(impl, text)
    Path(path).write_text(json.dumps({"medians": MEDIANS, "traffic": TRAFFIC,
                                      "bandwidth": BANDWIDTH, "notes": NOTES, "status": STATUS,
                                      "memory": MEMORY}))


def pytest_terminal_summary(terminalreporter) -> None:
    tr = terminalreporter
    NOTES.extend(_host_lines())
    NOTES.extend(_dispatch_lines())
    NOTES.extend(_experiment_lines())
    _share_records()
    peak = max(BANDWIDTH.values(), default=None)
    for name, rate in BANDWIDTH.items():
        NOTES.append(f"bandwidth, {name}: {rate / 1e9:.1f} GB/s")
    if NOTES:
        tr.section("measurements")
        for line in NOTES:
            tr.write_line(line)
    lines = _workload_lines(peak)
    if lines:
        tr.section("workloads (median; ratio = eager NumPy / implementation, same machine and "
                   "session, each implementation in its own process under nox -s bench)")
        for line in lines:
            tr.write_line(line)
    lines = corpus_lines(MEDIANS, STATUS)
    if lines:
        tr.section("corpus (median; ratio = eager NumPy / implementation; how Stax ran each program)")
        for line in lines:
            tr.write_line(line)
