"""Every way to build, test, lint, demo and benchmark Stax.

    nox -s tests        all five packages installed together, every test
    nox -s stress       the stress suites at full size (>= 10,000 programs, 1,000 corruption trials)
    nox -s isolated     each package alone with only its declared dependencies, its own tests
    nox -s lint         ruff
    nox -s demo         example 1.1 through every layer
    nox -s bench        pytest-benchmark: compiled vs eager NumPy

The packages are built once per nox run into a wheelhouse; sessions install from it with
``--no-index`` so a package gets exactly what its pyproject declares and nothing from the source tree.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = ["ir", "trace", "loop", "codegen", "runtime"]
WHEELHOUSE = ROOT / ".nox" / "wheelhouse"
TEST_DEPS = ["pytest>=8", "hypothesis>=6", "sympy>=1.12"]  # sympy: the oracle of stax.ir.sizes
#: the CUDA path's tests without a GPU: Triton's interpreter on torch CPU tensors, and Triton's
#: ahead-of-time compiler (torch 2.13.0 exactly: its CPU wheel is on the machine's disk)
CUDA_TEST_DEPS = ["torch==2.13.0", "triton==3.9.0"]
RUFF = "ruff==0.17.6"
#: the graph verifier after every pass, in every test session (stax.ir.passes.run_pipeline)
VERIFY = {"STAX_VERIFY_PASSES": "1"}

nox.options.sessions = ["lint", "tests", "isolated"]
nox.options.reuse_existing_virtualenvs = True

_built = False


def _wheelhouse(session: nox.Session) -> str:
    """Build all five packages, plus every third-party wheel they and the tests need, once."""
    global _built
    if not _built:
        for old in WHEELHOUSE.glob("stax_*.whl"):
            old.unlink()
        session.run("python", "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(WHEELHOUSE),
                    *[str(ROOT / "packages" / f"stax-{p}") for p in PACKAGES], *TEST_DEPS,
                    *CUDA_TEST_DEPS, "pytest-benchmark>=4")
        _built = True
    return str(WHEELHOUSE)


def _install(session: nox.Session, *requirements: str) -> None:
    # every Stax wheel carries the same version between releases: a reused environment would keep
    # an older build of a dependency (stax-ir under an isolated stax-loop), so all go first
    session.run("python", "-m", "pip", "uninstall", "--quiet", "--yes",
                *[f"stax-{p}" for p in PACKAGES], silent=True)
    session.install("--no-index", "--find-links", _wheelhouse(session), *requirements)


@nox.session
def tests(session: nox.Session) -> None:
    """Every package's tests against the five packages installed together."""
    _install(session, *[f"stax-{p}" for p in PACKAGES], *TEST_DEPS, *CUDA_TEST_DEPS)
    # every CUDA artifact the tests run (in Triton's interpreter) is recorded, then each kernel
    # compiled ahead of time for sm_90: code Triton's compiler rejects fails here, not on a GPU
    corpus = Path(session.create_tmp()) / "triton-corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    session.run("pytest", *[f"packages/stax-{p}/tests" for p in PACKAGES], *session.posargs,
                env={**VERIFY, "STAX_TRITON_CORPUS": str(corpus)})
    session.run("python", "tools/aot_corpus.py", str(corpus))


@nox.session
def stress(session: nox.Session) -> None:
    """The stress suites at full size (`nox -s tests` runs them small): at least 10,000 random
    programs compiled and compared with eager NumPy, with threads and forks, and 1,000 cache
    corruption trials. Known-defect strategies stay off unless STAX_STRESS_KNOWN names them
    (packages/stax-runtime/tests/stress/stress_flags.py)."""
    _install(session, *[f"stax-{p}" for p in PACKAGES], *TEST_DEPS)
    # Python's debug allocator poisons freed memory: a reference-count slip in machine code (a
    # result used after its last reference went) crashes at once instead of now and then
    env = {"STAX_STRESS_EXAMPLES": os.environ.get("STAX_STRESS_EXAMPLES") or "10000",
           "STAX_STRESS_CORRUPTION_TRIALS": os.environ.get("STAX_STRESS_CORRUPTION_TRIALS") or "1000",
           "PYTHONMALLOC": os.environ.get("PYTHONMALLOC") or "debug"}
    session.run("pytest", "packages/stax-runtime/tests/stress",
                "packages/stax-runtime/tests/test_cache_corruption.py", *session.posargs, env=env)


@nox.session
@nox.parametrize("package", PACKAGES)
def isolated(session: nox.Session, package: str) -> None:
    """One package with only its declared dependencies: proves the layering."""
    _install(session, f"stax-{package}", *TEST_DEPS,
             *(CUDA_TEST_DEPS if package == "codegen" else ()))
    session.run("python", "-c", "import importlib.util as u, sys; "
                "print('installed stax layers:', sorted(m for m in "
                "['stax.ir','stax.trace','stax.loop','stax.codegen','stax.runtime'] "
                "if u.find_spec(m)))")
    session.run("pytest", f"packages/stax-{package}/tests", *session.posargs, env=VERIFY)


@nox.session
def lint(session: nox.Session) -> None:
    session.install(RUFF)
    session.run("ruff", "check", "packages", "noxfile.py", "dev.py", "demo", "benchmarks", "tools")


@nox.session
def demo(session: nox.Session) -> None:
    """Example 1.1 through every layer, with timings against eager NumPy."""
    _install(session, *[f"stax-{p}" for p in PACKAGES])
    session.run("python", "demo/example_1_1.py", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: compiled vs eager NumPy, measured in one run."""
    _install(session, *[f"stax-{p}" for p in PACKAGES], "pytest>=8", "pytest-benchmark>=4")
    # the peers measured in the same run; torch.compile too where torch==2.13.0 is installed
    session.install("numexpr", "numba", "jax")
    options = ["--benchmark-only", "--benchmark-columns=median,iqr,rounds", "--benchmark-sort=name",
               *session.posargs]
    # each implementation in a process of its own: a peer's idle threads (Numba's, XLA's) would
    # disturb whatever ran after it; the processes merge their records, the last one prints all
    records = Path(session.create_tmp()) / "bench-records.json"
    records.unlink(missing_ok=True)
    env = {"STAX_BENCH_RECORDS": str(records)}
    # the training steps only: glibc's mmap threshold fixed at 128 KiB, every large block a
    # mapping of its own, given back when freed, so a step's resident high-water mark follows its
    # live memory (``conftest.peak_memory``; the default threshold grows as blocks are freed, and
    # a step then reuses freed heap pages its peak never shows). Not for the other cases: there
    # it made each NumPy temporary of 128 KiB and more a fresh mapping, faulted in on every call
    # (NumPy's softmax on (64, 1000) 80 -> 570 us), which is not how users run NumPy
    steps_env = {**env, "MALLOC_MMAP_THRESHOLD_": "131072"}
    # two rounds, the best median of each kept: this machine class drifts between minutes
    for impl in ("numpy", "numexpr", "numba", "jax", "torch", "stax") * 2:
        session.run("pytest", "benchmarks/test_bench_workloads.py", "benchmarks/test_bench_corpus.py",
                    "-k", f"(test_workload or test_corpus) and {impl}", *options, env=env)
        session.run("pytest", "benchmarks/test_bench_autodiff.py", "-k",
                    f"test_workload and {impl}", *options, env=steps_env)
    session.run("pytest", "benchmarks", "-k", "not test_workload and not test_corpus", *options, env=env)
