"""The corpus report: every program of ``benchmarks/corpus`` through ``stax.runtime.compile`` in
this one process, against eager NumPy.

    python tools/corpus_report.py                  # the table and totals
    python tools/corpus_report.py --json out.json  # the same rows as JSON
    python tools/corpus_report.py -k heat --no-timing

For each program: how it runs (``native``: LLVM kernels only; ``steps``: native, with the listed
calls run as NumPy steps between the kernels; ``fallback``: the whole function runs eagerly, for
the reason given; ``crash``/``hang``: the compiled call raised, or ran past ``--timeout``), the
number of data gates replayed per call, whether both calls (the first compiles, the second hits
the cache) give eager NumPy's result within the program's tolerance, the first call's time
(capture and compile included), and the median time against eager NumPy (plain ``timeit``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import statistics
import sys
import time
import timeit
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import corpus  # the benchmarks directory, not an installed package
from corpus.runners import copies, how_it_runs

import stax.runtime as stax


@dataclass
class Row:
    name: str
    kind: str
    runs_as: str = ""            # native | steps | fallback | crash | hang
    detail: str = ""             # the NumPy steps, the fallback reason, the error
    gates: int = 0               # data gates replayed on every call
    correct: bool | None = None  # None: no result to compare
    first_call_s: float = float("nan")  # capture + compile + the first run
    numpy_s: float = float("nan")
    stax_s: float = float("nan")

    @property
    def speedup(self) -> float:
        return self.numpy_s / self.stax_s


class _Timeout(BaseException):  # not an Exception: Stax must not catch it as a compiler error
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def median_time(call, budget: float) -> float:
    """The median of a few ``timeit`` repeats, each about ``budget / 5`` seconds long."""
    timer = timeit.Timer(call)
    number, elapsed = timer.autorange()  # at least 0.2 s
    number = max(1, int(number * budget / 5 / max(elapsed, 1e-9)))
    return statistics.median(t / number for t in timer.repeat(5, number))


def measure(program: corpus.Program, *, timing: bool, budget: float, timeout: float) -> Row:
    row = Row(program.name, program.kind)
    args = program.inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = program.fn(*copies(args))
        compiled = stax.compile(program.fn)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            start = time.perf_counter()
            first = compiled(*copies(args))
            row.first_call_s = time.perf_counter() - start
            second = compiled(*copies(args))
        except _Timeout:
            row.runs_as, row.detail = "hang", f"no result after {timeout:g} s"
            return row
        except Exception as exc:  # a compiled call must never raise where NumPy does not
            row.runs_as, row.detail = "crash", f"{type(exc).__name__}: {exc}"
            return row
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        row.runs_as, row.detail, row.gates = how_it_runs(compiled, args)
        wrong = corpus.mismatch(program, first, want) or corpus.mismatch(program, second, want)
        row.correct = wrong is None
        if wrong:
            row.detail = f"WRONG {wrong}" + (f"; {row.detail}" if row.detail else "")
        if timing:
            row.numpy_s = median_time(lambda: program.fn(*args), budget)
            row.stax_s = median_time(lambda: compiled(*args), budget)
    return row


def _plain(value: Any) -> Any:
    """NaN (not measured) as JSON's null."""
    return None if isinstance(value, float) and value != value else value


def _time(seconds: float) -> str:
    if seconds != seconds:
        return "-"
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 \
        else f"{seconds * 1e6:.1f} us"


def table(rows: list[Row]) -> list[str]:
    lines = [f"{'program':24} {'kind':9} {'runs as':8} {'gates':>5} {'correct':7} "
             f"{'1st call':>9} {'numpy':>9} {'stax':>9} {'vs numpy':>8}  detail"]
    for r in rows:
        correct = "-" if r.correct is None else "yes" if r.correct else "NO"
        speed = f"{r.speedup:.2f}x" if r.speedup == r.speedup else "-"
        detail = r.detail if len(r.detail) <= 150 else r.detail[:147] + "..."
        lines.append(f"{r.name:24} {r.kind:9} {r.runs_as:8} {r.gates:>5} {correct:7} "
                     f"{_time(r.first_call_s):>9} {_time(r.numpy_s):>9} {_time(r.stax_s):>9} "
                     f"{speed:>8}  {detail}")
    return lines


def totals(rows: list[Row]) -> dict[str, Any]:
    count = {s: sum(r.runs_as == s for r in rows) for s in ("native", "steps", "fallback", "crash",
                                                              "hang")}
    timed = [r.speedup for r in rows if r.speedup == r.speedup]
    return {
        "programs": len(rows), **count,
        "native_fraction": (count["native"] + count["steps"]) / len(rows) if rows else 0.0,
        "correct": sum(r.correct is True for r in rows),
        "wrong": [r.name for r in rows if r.correct is False],
        "geomean_vs_numpy": corpus.geomean(timed) if timed else None,
        "slower_than_numpy": sum(s < 1 for s in timed),
        "max_first_call_s": max((r.first_call_s for r in rows if r.first_call_s == r.first_call_s),
                                default=None),
    }


def summary(t: dict[str, Any]) -> str:
    geo = f"{t['geomean_vs_numpy']:.2f}x" if t["geomean_vs_numpy"] else "-"
    slowest = _time(t["max_first_call_s"]) if t["max_first_call_s"] is not None else "-"
    return (f"{t['programs']} programs: {t['native'] + t['steps']} native ({t['native']} kernels only, "
            f"{t['steps']} with NumPy steps), {t['fallback']} fall back, {t['crash']} crash, "
            f"{t['hang']} hang; {t['correct']} correct, {len(t['wrong'])} wrong"
            f"{' (' + ', '.join(t['wrong']) + ')' if t['wrong'] else ''}; geomean vs NumPy {geo}, "
            f"{t['slower_than_numpy']} slower than NumPy; slowest first call {slowest}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows and totals to this file")
    parser.add_argument("-k", default="", help="only programs whose name or kind contains this")
    parser.add_argument("--no-timing", action="store_true", help="compile and check only")
    parser.add_argument("--budget", type=float, default=0.5,
                        help="seconds of timing per implementation and program (default 0.5)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds a program's two compiled calls may take (default 120)")
    parser.add_argument("--disk-cache", action="store_true",
                        help="use Stax's disk cache (by default off: the first call compiles)")
    parser.add_argument("--logs", action="store_true", help="show Stax's fallback warnings")
    options = parser.parse_args(argv)
    if not options.disk_cache:
        os.environ["STAX_CACHE_DIR"] = "off"
    if not options.logs:  # the table gives every fallback's reason
        logging.getLogger("stax").setLevel(logging.ERROR)
    signal.signal(signal.SIGALRM, _alarm)
    rows = []
    for program in corpus.PROGRAMS.values():
        if options.k in program.name or options.k in program.kind:
            rows.append(measure(program, timing=not options.no_timing, budget=options.budget,
                                timeout=options.timeout))
            print(table(rows[-1:])[1], file=sys.stderr, flush=True)
    print("\n".join(table(rows)))
    result = totals(rows)
    print(summary(result))
    if options.json:
        records = [{k: _plain(v) for k, v in (asdict(r) | {"speedup": r.speedup}).items()}
                   for r in rows]
        options.json.write_text(json.dumps({"rows": records, "totals": result}, indent=1))
    return 0 if not result["wrong"] and not result["crash"] and not result["hang"] else 1


if __name__ == "__main__":
    sys.exit(main())
