"""``python -m stax.ir``: run a pass pipeline on a serialized graph from the command line.

    python -m stax.ir passes [--pipeline normalize,cse,dce] IN.json OUT.json

IN is a ``stax.capture/1`` or ``stax.opgraph/1`` document; OUT is the same kind of document with the
rewritten graph. The per-round log of spec example 4.2 goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

from .passes import DEFAULT_PIPELINE, run_pipeline
from .program import CAPTURE_SCHEMA, OPGRAPH_SCHEMA, GraphProgram
from .serialize import read_json, write_json
from .verify import verify_graph


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stax.ir")
    commands = parser.add_subparsers(dest="command", required=True)
    passes = commands.add_parser("passes", help="run graph passes to a fixed point")
    passes.add_argument("--pipeline", default=DEFAULT_PIPELINE,
                        help=f"comma-separated pass names (default: {DEFAULT_PIPELINE})")
    passes.add_argument("input")
    passes.add_argument("output")
    args = parser.parse_args(argv)
    doc = read_json(args.input)
    schema = OPGRAPH_SCHEMA if str(doc.get("schema", "")).startswith("stax.opgraph/") \
        else CAPTURE_SCHEMA
    program = GraphProgram.from_json(doc, schema)
    log = run_pipeline(program.graph, args.pipeline, verify=True)
    verify_graph(program.graph)
    print(log, file=sys.stderr)
    write_json(args.output, program.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
