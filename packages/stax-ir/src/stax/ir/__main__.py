"""``python -m stax.ir``: run a pass pipeline on a serialized graph from the command line.

    python -m stax.ir passes [--pipeline normalize,cse,dce] IN.json OUT.json

IN is a ``stax.capture/1`` or ``stax.opgraph/1`` document; OUT is the same kind of document with the
rewritten graph. The per-round log of spec example 4.2 goes to stderr.

A mistake in the command (a missing or unreadable file, text that is not JSON, a document of
another schema or with missing fields, an unknown pass) prints one line and exits with status 2,
as argparse does for a bad option; a traceback means a bug in Stax.
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import SchemaError, VerificationError
from .passes import DEFAULT_PIPELINE, parse_pipeline, run_pipeline
from .program import CAPTURE_SCHEMA, OPGRAPH_SCHEMA, GraphProgram
from .serialize import read_json, write_json
from .verify import verify_graph


class _UsageError(Exception):
    """A mistake in what the user gave: reported in one line, exit status 2."""


def _load(path: str) -> GraphProgram:
    try:
        doc = read_json(path)
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _UsageError(f"{path} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _UsageError(f"{path} holds a JSON {type(doc).__name__}, not a Stax document (an object "
                          "with a 'schema' field)")
    schema = OPGRAPH_SCHEMA if str(doc.get("schema", "")).startswith("stax.opgraph/") \
        else CAPTURE_SCHEMA
    try:
        program = GraphProgram.from_json(doc, schema)
        verify_graph(program.graph)
    except SchemaError as exc:
        raise _UsageError(f"{path}: {exc}") from None
    except VerificationError as exc:
        raise _UsageError(f"{path} is not a valid {schema} graph: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # the reader indexes the document as the schema says: a missing or mistyped field
        detail = f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise _UsageError(f"{path} is not a valid {schema} document ({detail})") from None
    return program


def _passes(args: argparse.Namespace) -> int:
    try:
        parse_pipeline(args.pipeline)
    except ValueError as exc:
        raise _UsageError(f"--pipeline: {exc}") from None
    program = _load(args.input)
    log = run_pipeline(program.graph, args.pipeline, verify=True)
    verify_graph(program.graph)
    print(log, file=sys.stderr)
    try:
        write_json(args.output, program.to_json())
    except OSError as exc:
        raise _UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stax.ir")
    commands = parser.add_subparsers(dest="command", required=True)
    passes = commands.add_parser("passes", help="run graph passes to a fixed point")
    passes.add_argument("--pipeline", default=DEFAULT_PIPELINE,
                        help=f"comma-separated pass names (default: {DEFAULT_PIPELINE})")
    passes.add_argument("input")
    passes.add_argument("output")
    args = parser.parse_args(argv)
    try:
        return _passes(args)
    except _UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
