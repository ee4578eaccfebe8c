"""The name walker: every name a piece of code mentions, resolved with Python's scopes to what it may be (a
library object's dotted path, an :class:`_Alias`, or student code, a :class:`_Code`), with ``on_*`` hooks that the
bypass review and the REVIEW flags fill in; and the binding tracking that says what each module-level name
may be before each cell, where a binding inside ``if``/``try``/``for`` adds to a name rather than replacing it."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from scaledl.course.review.library import _lookup


@dataclass(frozen=True, eq=False)
class _Alias:   # a name bound to a library object by an import or ``x = dotted.name``
    path: str
    cell: int = -1  # where, for a task name bound straight to a library object
    line: int = 0


@dataclass(frozen=True, eq=False)
class _Code:    # a name bound to student code: a def, a class, a lambda, or the value expression of an assignment
    cell: int
    node: ast.AST


def _chain(node) -> tuple[str, list[str]] | None:
    """``np.linalg.norm`` -> ("np", ["linalg", "norm"]); ``getattr(np, "x")`` counts as ``np.x``."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif _const_getattr(node):
            parts.append(node.args[1].value)
            node = node.args[0]
        elif isinstance(node, ast.Name):
            return node.id, parts[::-1]
        else:
            return None


def _const_getattr(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
        len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)


# --- the walk: every name a piece of code mentions, resolved with Python's scopes ------------------------------

@dataclass
class _Scope:
    names: dict            # name -> set of bindings (None: a local value of unknown kind)
    is_class: bool = False
    first_param: str | None = None


def _bound_here(body_nodes):
    """Every binding statement/node in a function or class body, not descending into nested scopes."""
    stack = list(body_nodes)
    while stack:
        node = stack.pop(0)
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
                             ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        stack[:0] = list(ast.iter_child_nodes(node))


class _Walker:
    """Visits code with Python's scoping, calling ``on_*`` hooks that subclasses fill in."""

    def __init__(self, state: dict, stars: tuple):
        self.state, self.stars, self.cell, self._called = state, stars, 0, set()

    # hooks
    def on_chain(self, node, text, targets, called, scopes): ...
    def on_attribute(self, name, node, scopes): ...
    def on_call(self, node, scopes): ...
    def on_def(self, node, scopes): ...
    def on_import(self, node, paths, scopes): ...
    def on_store(self, target, deleting, scopes): ...

    def resolve(self, head: str, attrs: list[str], scopes) -> list:
        """What ``head.attrs`` may be: dotted paths (str) and student code (_Code)."""
        bindings = None
        for k, scope in enumerate(reversed(scopes)):
            if scope.is_class and k > 0:  # a class body's names are not visible inside its methods
                continue
            if head in scope.names:
                bindings = scope.names[head]
                break
        if bindings is None:
            bindings = self.state.get(head)
        if bindings is None:
            bindings = {_Alias(f"{m}:{head}") for m in self.stars if hasattr(_lookup(m + ":"), head)}
        out = []
        for b in bindings:
            if isinstance(b, _Alias):
                out.append(".".join([b.path, *attrs]))
            elif isinstance(b, _Code):
                out.append(b)
        return out

    def _scope(self, args: ast.arguments | None, body, scopes, is_class=False) -> _Scope:
        names: dict = {}
        params = [] if args is None else [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                           *(a for a in (args.vararg, args.kwarg) if a)]
        for a in params:
            names.setdefault(a.arg, set()).add(None)
        scope = _Scope(names, is_class, params[0].arg if params else None)
        outer = [n for node in body for n in _bound_here([node])]
        skip = {n for node in outer if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
        for node in outer:
            for name, value in _bindings_of(node):
                if name in skip:
                    continue
                if isinstance(value, _Alias):
                    names.setdefault(name, set()).add(value)
                    continue
                c = _chain(value) if value is not None else None
                found = self.resolve(c[0], c[1], [*scopes, scope]) if c else []
                names.setdefault(name, set()).update(
                    {_Alias(t) if isinstance(t, str) else t for t in found} or {None})
        return scope

    def visit(self, node, scopes):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda):
                self.on_def(node, scopes)
                for d in node.decorator_list:
                    self.visit(d, scopes)
            for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
                self.visit(d, scopes)
            body = node.body if isinstance(node.body, list) else [node.body]
            inner = [*scopes, self._scope(node.args, body, scopes)]
            for stmt in body:
                self.visit(stmt, inner)
            return
        if isinstance(node, ast.ClassDef):
            for d in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self.visit(d, scopes)
            inner = [*scopes, self._scope(None, node.body, scopes, is_class=True)]
            for stmt in node.body:
                self.visit(stmt, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            self.visit(node.generators[0].iter, scopes)
            names = {n: {None} for g in node.generators for n in _target_names(g.target)}
            inner = [*scopes, _Scope(names)]
            for k, g in enumerate(node.generators):
                for part in ([] if k == 0 else [g.iter]) + g.ifs:
                    self.visit(part, inner)
            for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
                self.visit(part, inner)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.on_import(node, _import_paths(node), scopes)
            return
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.For, ast.AsyncFor)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                self.on_store(t, isinstance(node, ast.Delete), scopes)
        if isinstance(node, ast.withitem) and node.optional_vars is not None:
            self.on_store(node.optional_vars, False, scopes)
        if isinstance(node, ast.Call):
            self._called.add(id(node.func))
        c = _chain(node) if isinstance(node, (ast.Name, ast.Attribute, ast.Call)) else None
        if c and not (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)):
            self.on_chain(node, ".".join([c[0], *c[1]]), self.resolve(c[0], c[1], scopes),
                          id(node) in self._called, scopes)
            part = node
            while not isinstance(part, ast.Name):
                if isinstance(part, ast.Attribute):
                    self.on_attribute(part.attr, part, scopes)
                    part = part.value
                else:  # getattr(x, "name", default): the default is code too
                    self.on_attribute(part.args[1].value, part, scopes)
                    for extra in [*part.args[2:], *(k.value for k in part.keywords)]:
                        self.visit(extra, scopes)
                    part = part.args[0]
            if isinstance(node, ast.Call):
                self.on_call(node, scopes)
            return
        if isinstance(node, ast.Attribute):
            self.on_attribute(node.attr, node, scopes)
        if isinstance(node, ast.Call):
            self.on_call(node, scopes)
        for child in ast.iter_child_nodes(node):
            self.visit(child, scopes)


def _import_paths(node) -> list[tuple[str, str]]:
    """(bound name, dotted path) for each name an import statement binds; relative imports bind nothing known."""
    if isinstance(node, ast.Import):
        return [(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0]) for a in node.names]
    if node.level or not node.module:
        return []
    return [(a.asname or a.name, f"{node.module}:{a.name}") for a in node.names]


def _target_names(target) -> list[str]:
    """Names an assignment target binds: ``a, (b, *c)`` -> a, b, c; ``x.y`` and ``x[i]`` bind no name."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    return []


def _bindings_of(node):
    """(name, value) pairs a statement binds: value an _Alias, an expression node, or None (unknown)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(name, _Alias(path)) for name, path in _import_paths(node) if not path.endswith(":*")]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, None)]
    pairs = []
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(t, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) and \
                    len(t.elts) == len(node.value.elts):
                pairs += [(e.id, v) for e, v in zip(t.elts, node.value.elts) if isinstance(e, ast.Name)]
            else:
                pairs += [(n, node.value) for n in _target_names(t)]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        pairs += [(n, node.iter) for n in _target_names(node.target)]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        pairs += [(n, node.context_expr) for n in _target_names(node.optional_vars)]
    elif isinstance(node, ast.NamedExpr):
        pairs.append((node.target.id, node.value))
    elif isinstance(node, ast.ExceptHandler) and node.name:
        pairs.append((node.name, None))
    return pairs


# --- what each module-level name may be, cell by cell ----------------------------------------------------------

def _states(parsed) -> list[tuple[dict, tuple]]:
    """(name -> frozenset of bindings, star-imported modules) before each parsed cell, and after the last."""
    state, stars, out = {}, [], []
    walker = _Walker(state, ())

    def bind(name, value, cell, student, conditional, line=0):
        if isinstance(value, _Alias):
            new = {_Alias(value.path, cell, line)}
        elif isinstance(value, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            new = {_Code(cell, value) if student else None}
        elif value is None:
            new = {None}
        else:
            c = _chain(value)
            found = walker.resolve(c[0], c[1], []) if c else []
            new = {_Alias(t, cell, line) if isinstance(t, str) else t for t in found} or \
                {_Code(cell, value) if student else None}
        state[name] = frozenset(new | set(state.get(name, ())) if conditional else new)

    def run(stmts, cell, student, conditional):
        for stmt in stmts:
            line = getattr(stmt, "lineno", 0)
            if isinstance(stmt, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.Try, getattr(ast, "TryStar", ast.Try))):
                if isinstance(stmt, (ast.For, ast.AsyncFor)):
                    for name, value in _bindings_of(stmt):
                        bind(name, value, cell, student, True, line)
                handlers = getattr(stmt, "handlers", [])
                for h in handlers:
                    if h.name:
                        bind(h.name, None, cell, student, True)
                for body in (stmt.body, stmt.orelse, getattr(stmt, "finalbody", []), *(h.body for h in handlers)):
                    run(body, cell, student, True)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    for name, value in _bindings_of(item):
                        bind(name, value, cell, student, conditional, line)
                run(stmt.body, cell, student, conditional)
            elif isinstance(stmt, getattr(ast, "Match", ())):
                for case in stmt.cases:
                    run(case.body, cell, student, True)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(stmt.name, stmt, cell, student, conditional, line)
            else:
                if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names) and stmt.module:
                    stars.append(stmt.module)
                for name, value in _bindings_of(stmt):
                    bind(name, value, cell, student, conditional or isinstance(stmt, ast.AugAssign), line)
            for node in ast.walk(stmt):  # walrus at module level; `global x` rebinding from inside a function
                if isinstance(node, ast.NamedExpr) and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    bind(node.target.id, node.value, cell, student, True, line)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = list(_bound_here(node.body))
                    declared = {n for g in inner if isinstance(g, ast.Global) for n in g.names}
                    for name, value in (p for n in inner for p in _bindings_of(n)):
                        if name in declared:
                            bind(name, value, cell, student, True, line)

    for index, tree, _, student in parsed:
        out.append((dict(state), tuple(stars)))
        if tree is not None:
            run(tree.body, index, student, False)
    out.append((dict(state), tuple(stars)))
    return out
