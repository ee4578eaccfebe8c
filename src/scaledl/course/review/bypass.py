"""The per-task bypass review: from a task's functions, follow every helper, class and module-level value its
code reaches by name, as bound just before the task's autograded cell, and report the library's own answer
(``Task.forbidden`` by identity, anything from ``Task.forbidden_modules``, any of ``Task.forbidden_attributes``)
or, for a task that must write a CUDA kernel, the lack of one. Each finding costs the task its points."""

from __future__ import annotations

import ast
import types

from scaledl.course.review.findings import Finding, _finding
from scaledl.course.review.library import _MISSING, _is_code, _is_cuda_jit, _lookup, _owner, _prefixes, _shown, _under
from scaledl.course.review.walker import _Alias, _Code, _Walker, _chain

NO_KERNEL = "defines no CUDA kernel of its own (no @cuda.jit function)"  # a kernel task's finding


# --- per task: the library's own answer anywhere its code reaches ----------------------------------------------

class _TaskWalker(_Walker):
    def __init__(self, task, state, stars, sources):
        super().__init__(state, stars)
        self.task, self.sources, self.findings, self.kernel = task, sources, [], False
        self.todo, self.seen = [], set()
        self.banned = [(f, _lookup(f)) for f in task.forbidden]

    def add(self, code: _Code):
        if id(code.node) not in self.seen:
            self.seen.add(id(code.node))
            self.todo.append(code)

    def run(self):
        while self.todo:
            code = self.todo.pop(0)
            self.cell = code.cell
            self.visit(code.node, [])

    def flag(self, node, why, cell=None):
        cell = self.cell if cell is None else cell
        self.findings.append(_finding(self.sources[cell], cell, node if isinstance(node, int) else node.lineno,
                                      why, self.task.grade_id))

    def check_path(self, path, text, verb, node, cell=None):
        """Flag ``path`` when it, or an object on the way to it, is the library's own answer."""
        dotted = _shown(path)
        shown = dotted if text == dotted else f"{text} ({dotted})"
        obj = _MISSING
        for prefix, key in _prefixes(path):
            obj = _lookup(key)
            for name, banned in self.banned:
                if obj is _MISSING or banned is _MISSING:  # cannot import one of them here: judge by the name
                    same = prefix == name
                else:
                    same = obj is banned and (_is_code(banned) or isinstance(banned, types.ModuleType))
                if same:
                    return self.flag(node, f"{verb} {shown}, the library's own answer", cell)
            owner = _owner(obj) if _is_code(obj) else ""
            if owner and any(_under(owner, m) for m in self.task.forbidden_modules):
                return self.flag(node, f"{verb} {shown}, from {owner}: the library's own answer", cell)
        if obj is _MISSING and not dotted.split(".")[-1].isupper():
            module = next((m for m in self.task.forbidden_modules if dotted.startswith(m + ".")), None)
            if module:
                self.flag(node, f"{verb} {shown}, from {module}: the library's own answer", cell)

    def on_chain(self, node, text, targets, called, scopes):
        if isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            return
        if text.split(".")[0] in getattr(self.task, "replaced", ()):
            return  # swapped for the reference while this task runs: another task grades it
        for t in targets:
            if isinstance(t, _Code):
                self.add(t)
            else:
                self.check_path(t, text, "calls" if called else "uses", node)

    def on_attribute(self, name, node, scopes):
        if name in self.task.forbidden_attributes:
            verb = "calls" if id(node) in self._called else "uses"
            self.flag(node, f"{verb} .{name}, which this task must do without")

    def on_import(self, node, paths, scopes):
        for _, path in paths:
            self.check_path(path, path, "imports", node)

    def is_jit(self, expr, scopes) -> bool:
        c = _chain(expr)
        return bool(c) and any(isinstance(t, str) and _is_cuda_jit(t) for t in self.resolve(c[0], c[1], scopes))

    def on_def(self, node, scopes):
        for d in node.decorator_list:
            call = isinstance(d, ast.Call)
            if self.is_jit(d.func if call else d, scopes) and not (call and _device_only(d)):
                self.kernel = True

    def on_call(self, node, scopes):
        if isinstance(node.func, ast.Call) and self.is_jit(node.func.func, scopes) and not _device_only(node.func):
            self.kernel = True  # cuda.jit(...)(f)
        elif self.is_jit(node.func, scopes) and not _device_only(node) and node.args and \
                isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Lambda)):
            self.kernel = True  # cuda.jit(f)


def _device_only(call: ast.Call) -> bool:
    """``cuda.jit(device=True)``: a device function, which no one can launch."""
    return any(k.arg == "device" and isinstance(k.value, ast.Constant) and k.value.value for k in call.keywords)


def _grading_cell(parsed, grade_id) -> int | None:
    """Position (in ``parsed``) of the first instructor cell that names ``grade_id``: its hidden test runs there."""
    for k, (_, tree, _, student) in enumerate(parsed):
        if not student and tree is not None and any(
                isinstance(n, ast.Constant) and n.value == grade_id for n in ast.walk(tree)):
            return k
    return None


def _review_task(task, parsed, states, sources) -> list[Finding]:
    k = _grading_cell(parsed, task.grade_id)
    heads = [name.split(".")[0] for name in task.functions]
    state, stars = states[-1] if k is None else states[k]
    if k is not None and not all(any(b is not None for b in state.get(h, ())) for h in heads):
        state, stars = states[-1]  # not defined before its test: judge what the notebook ends with
    walker = _TaskWalker(task, state, stars, sources)
    first = None  # (cell, line) of the task's first definition
    for name, head in zip(task.functions, heads):
        for b in state.get(head, ()):
            if isinstance(b, _Code):
                walker.add(b)
                first = first or (b.cell, getattr(b.node, "lineno", 1))
            elif isinstance(b, _Alias) and b.cell >= 0:
                path = ".".join([b.path, *name.split(".")[1:]])
                walker.check_path(path, name, f"defines {name} as", b.line, cell=b.cell)
                first = first or (b.cell, b.line)
    walker.run()
    if task.requires_kernel and first is not None and not walker.kernel:
        walker.flag(first[1], NO_KERNEL, cell=first[0])
    return walker.findings
