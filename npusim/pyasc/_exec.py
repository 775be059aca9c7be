"""Running a pyasc ``@asc.jit`` function's Python body on npusim.

The body is recompiled from its source, at its own file and line numbers (so a traceback
and npusim's checker name the user's lines), with two rewrites that give Python pyasc's
meaning of the code:

* its global names are rebound: ``asc`` (and ``asc.language``...) to npusim's ``asc``
  namespace (:mod:`npusim.pyasc._api`), an object imported from pyasc (``from asc import
  add``) to its npusim binding, another ``@asc.jit`` function to its own recompiled body
  (pyasc inlines such calls as device functions), and ``range`` to one yielding Ints;
* a ``with`` statement becomes a loop over its context: pyasc's code generator gives
  ``with matmul.iterate() as count:`` a loop body (``FunctionVisitor.visit_With``), and a
  context object that is a loop (``__npusim_loop__``) runs it once per iteration;
  an ordinary context manager runs the body once.

Globals are looked up again at every launch, as pyasc re-specialises a kernel on the
constants it reads.
"""
from __future__ import annotations

import ast
import inspect
import types

from npusim.pyasc import _api


def with_loop(context):
    """The iterations of a rewritten ``with`` (see the module doc)."""
    loop = getattr(context, "__npusim_loop__", None)
    if loop is not None:
        yield from loop()
        return
    value = context.__enter__()
    try:
        yield value
    finally:
        context.__exit__(None, None, None)


class _WithAsLoop(ast.NodeTransformer):
    def visit_With(self, node: ast.With):
        self.generic_visit(node)
        if len(node.items) != 1:
            return node
        item = node.items[0]
        target = item.optional_vars or ast.Name(id="_npusim_with_value", ctx=ast.Store())
        call = ast.Call(func=ast.Name(id="__npusim_with__", ctx=ast.Load()),
                        args=[item.context_expr], keywords=[])
        return ast.copy_location(ast.For(target=target, iter=call, body=node.body, orelse=[]),
                                 node)


def _def_line(fn) -> int:
    """File line of ``def`` (co_firstlineno is the first decorator's)."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            return start + i
    return start


_CODE_CACHE: dict = {}


def device_code(jit_fn) -> types.CodeType:
    """The code object of ``jit_fn``'s body, rewritten (cached per function)."""
    code = _CODE_CACHE.get(jit_fn)
    if code is None:
        node = jit_fn.parse().body[0]            # pyasc's own parse: the def, no decorators
        node.decorator_list = []
        node.returns = None
        for arg in node.args.args:               # annotations were evaluated by Python already
            arg.annotation = None
        tree = ast.fix_missing_locations(_WithAsLoop().visit(ast.Module([node], [])))
        ast.increment_lineno(tree, _def_line(jit_fn.fn) - node.lineno)
        module = compile(tree, jit_fn.fn.__code__.co_filename, "exec")
        code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        _CODE_CACHE[jit_fn] = code
    return code


class Binder:
    """Rebinds the globals of the jit functions of one launch (module doc)."""

    def __init__(self):
        from asc.runtime.jit import JITFunction
        import asc
        import asc.language as L
        import asc.language.adv as A
        self._jit_type = JITFunction
        ns = _api.namespace()
        self._modules = {id(asc): ns, id(L): ns, id(A): ns.adv}
        for sub in ("basic", "core", "fwk"):
            self._modules[id(getattr(L, sub))] = ns
        self._objects = {}
        for space, names, real in ((ns, L.__all__, L), (ns.adv, A.__all__, A)):
            for name in names:
                obj = getattr(real, name, None)
                if obj is not None and hasattr(space, name) and not isinstance(obj, (int, str)):
                    self._objects.setdefault(id(obj), getattr(space, name))
        self._functions: dict = {}

    def rebind(self, value):
        if isinstance(value, self._jit_type):
            return self._lazy(value)
        if isinstance(value, types.ModuleType):
            return self._modules.get(id(value), value)
        try:
            return self._objects.get(id(value), value)
        except TypeError:
            return value

    def _lazy(self, jit_fn):
        """Another jit function the body calls: compiled when first called (so that
        functions calling each other do not recurse here)."""
        def call(*args, **kwargs):
            return self.function(jit_fn)(*args, **kwargs)
        call.__name__ = jit_fn.fn.__name__
        return call

    def function(self, jit_fn):
        """``jit_fn``'s body as a Python function over npusim's ``asc``."""
        fn = self._functions.get(jit_fn)
        if fn is None:
            base = jit_fn.fn
            scope = dict(base.__globals__)
            scope.update(inspect.getclosurevars(base).nonlocals)
            scope = {k: self.rebind(v) for k, v in scope.items()}
            scope["range"] = _api.pyasc_range
            scope["__npusim_with__"] = with_loop
            fn = types.FunctionType(device_code(jit_fn), scope, base.__name__, base.__defaults__)
            self._functions[jit_fn] = fn
        return fn
