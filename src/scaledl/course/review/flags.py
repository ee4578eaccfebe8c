"""The REVIEW flags: constructs anywhere in student cells that static reading cannot follow or that reach past
the notebook's code (dynamic lookups, ``exec``, the import system, frames, the interpreter or the IPython
shell, processes and signals, rebinding inside an imported module). A flag asks a person to look; it costs no
points."""

from __future__ import annotations

import ast
import re

from scaledl.course.review.findings import _finding
from scaledl.course.review.library import _shown, _under
from scaledl.course.review.walker import _Walker, _chain

# Builtins that look a name up, or run code, that static reading cannot see.
DYNAMIC_BUILTINS = {"getattr", "setattr", "delattr", "vars", "globals", "locals", "exec", "eval", "compile",
                    "__import__", "breakpoint", "get_ipython", "__builtins__", "__loader__", "__spec__"}
# Modules whose every use reaches past the notebook's code: the import system, C memory, other processes.
SUSPICIOUS_MODULES = ("importlib", "ctypes", "subprocess", "signal", "resource", "socket", "builtins",
                      "multiprocessing", "marshal", "runpy", "pdb", "code", "codeop", "pty", "posix", "nt",
                      "ipykernel", "IPython.core", "IPython.get_ipython")
SUSPICIOUS_PATHS = re.compile(
    r"^(sys\.(modules|_getframe|settrace|setprofile|meta_path|path_hooks)"
    r"|gc\.(get_objects|get_referrers|get_referents)"
    r"|inspect\.(currentframe|stack|getouterframes|getmembers|getattr_static)"
    r"|os\.(kill|killpg|fork|forkpty|setsid|system|popen|exec\w*|spawn\w*|posix_spawn\w*|_exit)"
    r"|threading\.(settrace|setprofile)|operator\.(attrgetter|methodcaller)|types\.(FunctionType|CodeType))(\.|$)")
# Attributes that open a function's globals, a class's subclasses, a frame or the builtins.
DUNDER_ATTRIBUTES = {"__dict__", "__globals__", "__code__", "__closure__", "__subclasses__", "__bases__",
                     "__base__", "__mro__", "__builtins__", "__getattribute__", "__setattr__", "__delattr__",
                     "__import__", "__loader__", "__spec__", "__self__", "__func__", "__wrapped__", "__defaults__",
                     "__kwdefaults__", "__reduce__", "__reduce_ex__", "__traceback__", "tb_frame", "f_globals",
                     "f_locals", "f_back", "f_builtins", "gi_frame", "cr_frame", "ag_frame"}
# Ways to reach a module's code without naming it in an import: deserialisers that import whatever a payload
# names (pickle.loads(b"cscaledl.sparsity.masks\nmagnitude_mask\n.") returns the function), code objects and
# loaders, C memory. Where the graded process has the library's answers left out (bwrap) none of them finds
# anything; elsewhere a use is flagged for review (Review.routes).
IMPORT_ROUTES = ("pickle", "_pickle", "copyreg", "shelve", "dill", "cloudpickle", "joblib", "marshal", "zipimport",
                 "pkgutil", "importlib", "runpy", "ctypes", "cffi")
SOURCE_FILE = re.compile(r"\.(py|pyc|pyd|so)\b|site-packages|scaledl/|/proc/")
# Raw file descriptors: the grader's channel to a graded process is a pair of pipes in that very process.
FD_PATHS = re.compile(r"^os\.(read|write|fdopen|dup2?|pipe|set_inheritable)$")
# Rebinding these inside an imported module is ordinary notebook code.
FAIR_TO_ASSIGN = re.compile(r"^(os\.environ|matplotlib\.(pyplot\.)?rcParams)(\.|$)")


# --- anywhere in student cells: what static reading cannot follow ----------------------------------------------

def _suspicious_path(path: str) -> bool:
    return bool(SUSPICIOUS_PATHS.match(path)) or any(_under(path, m) for m in SUSPICIOUS_MODULES)


class _ScanWalker(_Walker):
    def __init__(self, state, stars, sources):
        super().__init__(state, stars)
        self.sources, self.findings, self.routes = sources, [], []

    def flag(self, node, why):
        self.findings.append(_finding(self.sources[self.cell], self.cell, node.lineno, why, None))

    def route(self, node, why):
        self.routes.append(_finding(self.sources[self.cell], self.cell, node.lineno, why, None))

    def builtin(self, name, scopes) -> bool:
        """``name`` is Python's builtin here, not something the notebook bound."""
        return name in DYNAMIC_BUILTINS and not any(name in s.names for s in scopes) and name not in self.state

    def is_self(self, node, scopes) -> bool:
        """``node`` is the first parameter of the enclosing method (``self``)."""
        fn = next((s for s in reversed(scopes) if s.first_param is not None), None)
        return isinstance(node, ast.Name) and fn is not None and node.id == fn.first_param

    def on_chain(self, node, text, targets, called, scopes):
        head = text.split(".")[0]
        if self.builtin(head, scopes) and not (called and text == head):  # calls are judged in on_call
            return self.flag(node, f"uses {head}")
        for t in targets:
            if isinstance(t, str) and FD_PATHS.match(_shown(t)):
                self.route(node, f"uses {_shown(t)}, a raw file descriptor")
            if isinstance(t, str) and _suspicious_path(_shown(t)):
                shown = _shown(t) if _shown(t) == text else f"{text} ({_shown(t)})"
                return self.flag(node, f"{'calls' if called else 'uses'} {shown}")

    def on_attribute(self, name, node, scopes):
        if name in DUNDER_ATTRIBUTES and not (name == "__dict__" and isinstance(node, ast.Attribute)
                                               and self.is_self(node.value, scopes)):
            self.flag(node, f"reaches into {name}")

    def on_call(self, node, scopes):
        f = node.func
        texts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if any(SOURCE_FILE.search(t) for t in texts):
            self.route(node, "names a source or library file, which could be read and run without an import")
        if not (isinstance(f, ast.Name) and self.builtin(f.id, scopes)):
            return
        args = node.args
        named = len(args) >= 2 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)
        if f.id == "getattr" and named:
            return
        if f.id in ("setattr", "delattr") and named:
            c = _chain(args[0])
            if not (c and any(isinstance(t, str) for t in self.resolve(c[0], c[1], scopes))):
                return  # a constant attribute of the student's own object
            return self.flag(node, f"{f.id} on {ast.unparse(args[0])[:40]}, an imported object")
        if f.id == "vars" and len(args) == 1 and self.is_self(args[0], scopes):
            return
        if f.id in ("getattr", "setattr", "delattr"):
            return self.flag(node, f"{f.id} with a computed name")
        self.flag(node, f"calls {f.id}")

    def on_import(self, node, paths, scopes):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [] if node.level or not node.module else [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        bad = next((n for n in names if _suspicious_path(n)), None)
        if bad:
            self.flag(node, f"imports {bad}")
        way = next((n for n in names if any(_under(n, m) for m in IMPORT_ROUTES)), None)
        if way:
            self.route(node, f"imports {way}, a way to load code without importing it by name")

    def on_store(self, target, deleting, scopes):
        base = target.value if isinstance(target, ast.Subscript) else target
        while isinstance(base, ast.Subscript):
            base = base.value
        c = _chain(base) if isinstance(target, (ast.Attribute, ast.Subscript)) else None
        paths = [t for t in (self.resolve(c[0], c[1], scopes) if c else []) if isinstance(t, str)]
        if paths and not all(FAIR_TO_ASSIGN.match(_shown(p)) for p in paths):
            what = ast.unparse(target)[:60]
            self.flag(target, f"{'deletes' if deleting else 'assigns to'} {what}, inside an imported module")
