"""The pieces of Python the loop rewriter (``loops._Rewriter``) builds around a loop's body: the
body and whole-loop functions, their parameters unbound where the caller's locals were, the
call that runs the loop and rebinds its locals, all placed at the loop's line."""

from __future__ import annotations

import ast


def function(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    return ast.FunctionDef(name=name, args=ast.arguments(
        posonlyargs=[], args=list(map(ast.arg, params)), kwonlyargs=[], kw_defaults=[],
        defaults=[]), body=body, decorator_list=[])


def unbind(params: list[str]) -> list[ast.stmt]:
    """``if p is __stax_unbound__: del p`` for each parameter: unbound in the body as before."""
    return [ast.If(ast.Compare(ast.Name(p, ast.Load()), [ast.Is()],
                               [ast.Name("__stax_unbound__", ast.Load())]),
                   [ast.Delete([ast.Name(p, ast.Del())])], []) for p in params]


def site(number: int) -> ast.Subscript:
    return ast.Subscript(ast.Name("__stax_sites__", ast.Load()), ast.Constant(number), ast.Load())


def run_and_rebind(params: list[str], run: ast.Call, assigned: list[str]) -> list[ast.stmt]:
    """The locals packed, the loop run, and each local it binds bound to its final value."""
    state = ast.Assign([ast.Name("__stax_state", ast.Store())],
                       call("__stax_pack__", _locals(), _names(params)))
    out = ast.Assign([ast.Name("__stax_out", ast.Store())], run)
    rebind = [ast.If(ast.Compare(_out(k), [ast.IsNot()], [ast.Name("__stax_unbound__", ast.Load())]),
                     [ast.Assign([ast.Name(name, ast.Store())], _out(k))], [])
              for k, name in enumerate(assigned)]
    return [state, out, *rebind]


def placed(statements: list[ast.stmt], node: ast.stmt) -> list[ast.stmt]:
    """``statements`` at the loop's line; the user's own statements in them keep theirs."""
    for statement in statements:
        ast.copy_location(statement, node)
        for child in ast.walk(statement):
            if not hasattr(child, "lineno") or child is statement:
                ast.copy_location(child, node)
    return statements


def return_values(names: list[str], goes_on: str | bool = False) -> ast.Try:
    """``return (a, b)``; where one has no value (``UnboundLocalError``), ``__stax_unbound__``
    in its place (``_pack`` of ``locals()``); a ``BreakForm``'s body returns whether the loop
    goes on last."""
    names = [*names, goes_on] if goes_on else names
    fallback = ast.Return(call("__stax_pack__", _locals(), _names(names)))
    return ast.Try(body=[ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in names],
                                              ast.Load()))],
                   handlers=[ast.ExceptHandler(ast.Name("UnboundLocalError", ast.Load()), None,
                                               [fallback])],
                   orelse=[], finalbody=[])


def call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _locals() -> ast.Call:
    return ast.Call(ast.Name("locals", ast.Load()), [], [])


def _names(names: list[str]) -> ast.Tuple:
    return ast.Tuple([ast.Constant(n) for n in names], ast.Load())


def _out(k: int) -> ast.Subscript:
    return ast.Subscript(ast.Name("__stax_out", ast.Load()), ast.Constant(k), ast.Load())
