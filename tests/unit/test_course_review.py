"""The grader's static review of a notebook's source: bypasses of the library and flags for a person."""

import glob
import os

import pytest

import scaledl.numerics
from scaledl.course import tasks as task_modules
from scaledl.course.review import Finding, review
from scaledl.course.tasks import Task

E4M3_FORBIDDEN = ("scaledl.numerics.quantize", "scaledl.numerics.encode", "ml_dtypes.float8_e4m3fn")


def make_task(functions=("e4m3_round",), grade_id="task_1_1", **static):
    static.setdefault("forbidden", E4M3_FORBIDDEN)
    return Task(grade_id, "Task 1.1", tuple(functions), lambda rng: {}, lambda ns, inputs: {},
                lambda inputs, outputs: None, local_seed=0, **static)


def run(*cells, tasks=None):
    """Review ``cells``: a string is a student cell, ``(source, False)`` an instructor cell; index = position."""
    tasks = [make_task()] if tasks is None else tasks
    return review([(i, c, True) if isinstance(c, str) else (i, *c) for i, c in enumerate(cells)], tasks)


def bypass(result, grade_id="task_1_1"):
    return [(f.cell, f.line, f.why) for f in result.bypass.get(grade_id, [])]


def flags(result):
    return [(f.cell, f.line, f.why) for f in result.suspicious]


HONEST = "import numpy as np\ndef e4m3_round(x):\n    return np.rint(np.asarray(x) * 8) / 8\n"


# --- bypass: the library's own answer in the task's code -------------------------------------------------------

def test_honest_answer_gives_nothing():
    r = run(HONEST)
    assert r.bypass == {} and r.suspicious == []


def test_direct_forbidden_call_costs_the_task_with_cell_line_and_code():
    r = run("x = 1", "from scaledl.numerics import quantize\n\ndef e4m3_round(x):\n    return quantize(x, 'e4m3')")
    assert r.bypass["task_1_1"] == [Finding(1, 4, "return quantize(x, 'e4m3')",
                                            "calls quantize (scaledl.numerics.quantize), the library's own answer",
                                            "task_1_1")]
    assert r.suspicious == []


@pytest.mark.parametrize("imports, call", [
    ("from scaledl.numerics import quantize as q", "q(x, 'e4m3')"),
    ("import scaledl.numerics as N", "N.quantize(x, 'e4m3')"),
    ("import scaledl.numerics", "scaledl.numerics.quantize(x, 'e4m3')"),
    ("import scaledl", "scaledl.numerics.quantize(x, 'e4m3')"),
    ("from scaledl import numerics", "numerics.encode(x, 'e4m3')"),
    ("import scaledl.numerics as N\nq = N.quantize", "q(x, 'e4m3')"),           # a module-level alias
    ("import ml_dtypes", "x.astype(ml_dtypes.float8_e4m3fn)"),                 # a forbidden class, not called
    ("import scaledl.numerics as N", "getattr(N, 'quantize')(x, 'e4m3')"),       # a constant getattr is N.quantize
])
def test_aliased_imports_resolve_to_the_forbidden_name(imports, call):
    r = run(imports, f"def e4m3_round(x):\n    return {call}")
    assert [(c, line) for c, line, _ in bypass(r)] == [(1, 2)], r
    assert r.suspicious == []


def test_reexport_under_another_module_matches_by_identity():
    home = scaledl.numerics.quantize.__module__   # where the function object really lives
    assert home != "scaledl.numerics"
    r = run(f"from {home} import quantize as fast\ndef e4m3_round(x):\n    return fast(x, 'e4m3')")
    assert bypass(r) == [(0, 3, f"calls fast ({home}.quantize), the library's own answer")]


def test_reexport_from_its_home_module_matches_the_package_name():
    t = make_task(("octav",), forbidden=("scaledl.numerics.octav_clip",))
    r = run("from scaledl.numerics.scaling import octav_clip as oc\ndef octav(x, bits):\n    return oc(x, bits)",
            tasks=[t])
    assert bypass(r) == [(0, 3, "calls oc (scaledl.numerics.scaling.octav_clip), the library's own answer")]


def test_same_name_from_a_module_where_it_is_not_the_forbidden_object_is_fair():
    # numpy.round is not scaledl.numerics.quantize, whatever either is called
    r = run("from numpy import round as quantize\ndef e4m3_round(x):\n    return quantize(x * 8) / 8")
    assert r.bypass == {}


@pytest.mark.parametrize("helpers", [
    "def helper(x):\n    return quantize(x, 'e4m3')\n",
    "def deeper(x):\n    return quantize(x, 'e4m3')\ndef helper(x):\n    return deeper(x)\n",
])
def test_a_helper_one_or_two_levels_down_is_followed(helpers):
    r = run("from scaledl.numerics import quantize", helpers, "def e4m3_round(x):\n    return helper(x)")
    (cell, line, why), = bypass(r)
    assert (cell, line) == (1, 2) and why.startswith("calls quantize")


def test_method_of_a_class_and_what_it_reaches_through_self():
    src = ("class Rounder:\n"
           "    def __init__(self):\n"
           "        self.fmt = 'e4m3'\n"
           "    def _q(self, x):\n"
           "        return N.quantize(x, self.fmt)\n"
           "    def round(self, x):\n"
           "        return self._q(x)\n")
    r = run("import scaledl.numerics as N", src, tasks=[make_task(("Rounder.round",))])
    assert [(c, line) for c, line, _ in bypass(r)] == [(1, 5)]
    honest = src.replace("N.quantize(x, self.fmt)", "x")
    assert run("import scaledl.numerics as N", honest, tasks=[make_task(("Rounder.round",))]).bypass == {}


def test_a_lambda_and_a_default_argument_are_task_code():
    r = run("from scaledl.numerics import quantize", "e4m3_round = lambda x: quantize(x, 'e4m3')")
    assert [(c, line) for c, line, _ in bypass(r)] == [(1, 1)]
    r = run("from scaledl.numerics import quantize", "def e4m3_round(x, q=quantize):\n    return q(x, 'e4m3')")
    assert [(c, line) for c, line, _ in bypass(r)] == [(1, 1)]


def test_task_name_bound_straight_to_the_library():
    r = run("from scaledl.numerics import quantize as e4m3_round")
    assert bypass(r) == [(0, 1, "defines e4m3_round as e4m3_round (scaledl.numerics.quantize), "
                                "the library's own answer")]


def test_module_level_value_the_task_uses_is_followed():
    r = run("import functools\nfrom scaledl.numerics import quantize\nq8 = functools.partial(quantize, fmt='e4m3')",
            "def e4m3_round(x):\n    return q8(x)")
    assert [(c, line) for c, line, _ in bypass(r)] == [(0, 3)]


def test_import_inside_the_task_function():
    r = run("def e4m3_round(x):\n    import scaledl.numerics as N\n    return N.quantize(x, 'e4m3')")
    assert [(c, line) for c, line, _ in bypass(r)] == [(0, 3)]      # importing the package itself is fair
    r = run("def e4m3_round(x):\n    from scaledl.numerics import encode\n    return x")
    assert [(c, line) for c, line, _ in bypass(r)] == [(0, 2)]


CALLS_QUANTIZE = "def e4m3_round(x):\n    return quantize(x, 'e4m3')"


@pytest.mark.parametrize("cells", [
    ["from scaledl.numerics import *", CALLS_QUANTIZE],                                   # a star import
    ["from scaledl.numerics import quantize\nclass R:\n    def __call__(self, x):\n"
     "        return quantize(x, 'e4m3')\ne4m3_round = R()"],                               # a callable instance
    ["from scaledl.numerics import quantize\nfor e4m3_round in [quantize]:\n    pass"],     # a loop variable
    ["from scaledl.numerics import quantize\ntable = {'q': quantize}",                      # a container
     "def e4m3_round(x):\n    return table['q'](x, 'e4m3')"],
    ["def load():\n    global quantize\n    from scaledl.numerics import quantize\nload()",  # bound by `global`
     CALLS_QUANTIZE],
])
def test_values_that_hide_the_forbidden_function_are_followed(cells):
    r = run(*cells)
    assert r.bypass and all(f.task == "task_1_1" for f in r.bypass["task_1_1"]), r
    assert all("the library's own answer" in f.why for f in r.bypass["task_1_1"])


def test_local_names_shadow_the_imports():
    r = run("from scaledl.numerics import quantize",
            "def e4m3_round(x):\n    quantize = lambda v: v\n    return quantize(x)")
    assert r.bypass == {}
    r = run("from scaledl.numerics import quantize", "def e4m3_round(quantize):\n    return quantize + 1")
    assert r.bypass == {}


def test_forbidden_module_prefix_flags_code_but_not_constants():
    t = make_task(("area",), forbidden=(), forbidden_modules=("math",))
    r = run("import math\ndef area(r):\n    return math.pi * r * r", tasks=[t])
    assert r.bypass == {}
    r = run("import math\ndef area(r):\n    return math.pi * math.pow(r, 2)", tasks=[t])
    assert bypass(r) == [(0, 3, "calls math.pow, from math: the library's own answer")]
    t = make_task(("bias",), forbidden=(), forbidden_modules=("scaledl.numerics.formats",))
    r = run("import scaledl.numerics as N\ndef bias():\n    return N.FORMATS['e4m3'].bias", tasks=[t])
    assert r.bypass == {}                                      # a format object (a constant) is fair
    r = run("import scaledl.numerics as N\ndef bias():\n    return N.get_format('e4m3').bias", tasks=[t])
    assert bypass(r) == [(0, 3, "calls N.get_format (scaledl.numerics.get_format), from scaledl.numerics.formats: "
                                "the library's own answer")]


def test_forbidden_use_outside_the_task_closure_is_fair():
    r = run("from scaledl.numerics import quantize", HONEST,
            "spec = quantize(x, 'e4m3')\nprint((e4m3_round(x) == spec).all())")
    assert r.bypass == {} and r.suspicious == []


def test_the_definition_that_runs_in_the_hidden_test_is_the_one_judged():
    lazy = "from scaledl.numerics import quantize\ndef e4m3_round(x):\n    return quantize(x, 'e4m3')"
    grading = ("from scaledl.course import produce as _p\n_p.run('lab03', 'task_1_1', globals())", False)
    # an exploration first, then the honest answer, then the test: fair
    assert run(lazy, HONEST, grading).bypass == {}
    # the lazy one is what the test calls; an honest copy after the test changes nothing
    assert [c for c, _, _ in bypass(run(lazy, grading, HONEST))] == [0]
    # no grading cell found: the last definition wins
    assert run(lazy, HONEST).bypass == {}


def test_a_conditional_rebinding_adds_to_what_a_name_may_be():
    r = run("if True:\n    from scaledl.numerics import quantize as q\nelse:\n    def q(x, f):\n        return x",
            "def e4m3_round(x):\n    return q(x, 'e4m3')")
    assert [(c, line) for c, line, _ in bypass(r)] == [(1, 2)]


def test_forbidden_attribute_in_the_task_function():
    t = make_task(("ring_allreduce",), grade_id="task_2_1", forbidden=(), forbidden_attributes=("Allreduce",))
    src = ("from mpi4py import MPI\n"
           "def ring_allreduce(comm, x):\n"
           "    out = x.copy()\n"
           "    comm.Allreduce(x, out, op=MPI.SUM)\n"
           "    return out\n")
    r = run(src, tasks=[t])
    assert bypass(r, "task_2_1") == [(0, 4, "calls .Allreduce, which this task must do without")]
    honest = src.replace("comm.Allreduce(x, out, op=MPI.SUM)", "comm.Sendrecv(x, dest=0, recvbuf=out, source=0)")
    assert run(honest, tasks=[t]).bypass == {}


# --- kernels ---------------------------------------------------------------------------------------------------

KERNEL_TASK = make_task(("make_kernel",), grade_id="task_1_1", forbidden=(), forbidden_modules=("scaledl.kernels",),
                        requires_kernel=True)
BODY = "    def kernel(dst, src):\n        dst[0] = src[0]\n    return kernel\n"


@pytest.mark.parametrize("imports, decorated", [
    ("from numba import cuda", "    @cuda.jit\n" + BODY),
    ("import numba", "    @numba.cuda.jit('void(float32[:], float32[:])')\n" + BODY),
    ("from numba.cuda import jit", "    @jit\n" + BODY),
    ("from numba import cuda as c", "    @c.jit(fastmath=True)\n" + BODY),
    ("from numba import cuda", BODY.replace("return kernel", "return cuda.jit(kernel)")),
    ("from numba import cuda", BODY.replace("return kernel", "return cuda.jit('void(f4[:], f4[:])')(kernel)")),
])
def test_kernel_task_with_a_kernel_of_its_own(imports, decorated):
    r = run(imports, "def make_kernel():\n" + decorated, tasks=[KERNEL_TASK])
    assert r.bypass == {}


@pytest.mark.parametrize("imports, body", [
    ("from numba import cuda", "def make_kernel():\n" + BODY),
    ("from numba import cuda", "def make_kernel():\n    @cuda.jit(device=True)\n" + BODY),
    ("import numba", "def make_kernel():\n    @numba.jit\n" + BODY),                 # a CPU jit is not a kernel
])
def test_kernel_task_without_a_kernel_costs_its_points(imports, body):
    r = run(imports, body, tasks=[KERNEL_TASK])
    assert bypass(r) == [(1, 1, "defines no CUDA kernel of its own (no @cuda.jit function)")]


def test_kernel_in_a_helper_counts_and_a_library_kernel_does_not():
    helper = "from numba import cuda\n@cuda.jit\ndef _k(dst, src):\n    dst[0] = src[0]\n"
    assert run(helper, "def make_kernel():\n    return _k", tasks=[KERNEL_TASK]).bypass == {}
    r = run("from scaledl.kernels import gemm", "def make_kernel():\n    return gemm", tasks=[KERNEL_TASK])
    assert bypass(r) == [(1, 1, "defines no CUDA kernel of its own (no @cuda.jit function)"),
                         (1, 2, "uses gemm (scaledl.kernels.gemm), from scaledl.kernels.gemm: "
                                "the library's own answer")]


# --- suspicious: what static reading cannot follow -------------------------------------------------------------

@pytest.mark.parametrize("src, line, why", [
    ("import numpy as np\neq = getattr(np, 'arr' + 'ay_equal')", 2, "getattr with a computed name"),
    ("import importlib\nS = importlib.import_module('scal' + 'edl')", 1, "imports importlib"),
    ("from importlib import import_module as im\nim('x')", 1, "imports importlib"),
    ("import sys\nsys.modules['scaledl'].x = 1", 2, "uses sys.modules"),
    ("import sys\nsys.modules['scaledl.labs'] = None", 2, "assigns to sys.modules['scaledl.labs'], inside an "
                                                        "imported module"),
    ("import scaledl.labs.check as C\nvars(C).update(check=print)", 2, "calls vars"),
    ("def f():\n    pass\nglobals()['f'] = print", 3, "calls globals"),
    ("exec('x = 1')", 1, "calls exec"),
    ("y = eval('1 + 1')", 1, "calls eval"),
    ("import numpy as np\nnp.array_equal = lambda *a: True", 2, "assigns to np.array_equal, inside an imported module"),
    ("import numpy as np\ndel np.testing", 2, "deletes np.testing, inside an imported module"),
    ("from scaledl.labs import sparse_checks as S\nS.check_spmv = print", 2,
     "assigns to S.check_spmv, inside an imported module"),
    ("import numpy as np\nsetattr(np, 'array_equal', print)", 2, "setattr on np, an imported object"),
    ("get_ipython().set_custom_exc((Exception,), print)", 1, "calls get_ipython"),
    ("from IPython import get_ipython\nget_ipython().events.register('post_run_cell', print)", 1,
     "imports IPython.get_ipython"),
    ("def f(x):\n    return f.__globals__", 2, "reaches into __globals__"),
    ("subs = object.__subclasses__()", 1, "reaches into __subclasses__"),
    ("import sys\nframe = sys._getframe(1)", 2, "calls sys._getframe"),
    ("import os\nos.kill(os.getppid(), 9)", 2, "calls os.kill"),
    ("import gc\nobjs = gc.get_objects()", 2, "calls gc.get_objects"),
    ("import signal", 1, "imports signal"),
    ("import ctypes", 1, "imports ctypes"),
    ("import subprocess as sp", 1, "imports subprocess"),
    ("x = __builtins__", 1, "uses __builtins__"),
    ("!rm -rf /tmp/x", 1, "runs a shell command"),
    ("%%bash\necho hi", 1, "cell magic %%bash"),
])
def test_suspicious_constructs_are_flagged_for_review(src, line, why):
    r = run(src, tasks=[])
    assert (0, line, why) in flags(r), flags(r)
    assert r.bypass == {}


def test_one_flag_per_use_each_with_its_line():
    r = run("import numpy as np", "a = getattr(np, 'x' + 'y')\nb = 2\nc = eval('3')", tasks=[])
    assert flags(r) == [(1, 1, "getattr with a computed name"), (1, 3, "calls eval")]


def test_ordinary_code_is_not_flagged():
    src = ("import os\nimport numpy as np\nimport matplotlib.pyplot as plt\n"
           "os.environ['NUMBA_ENABLE_CUDASIM'] = '1'\nplt.rcParams['figure.dpi'] = 120\n"
           "class Box:\n"
           "    def __init__(self, **kw):\n"
           "        self.__dict__.update(kw)\n"
           "        setattr(self, 'n', 1)\n"
           "        self.size = getattr(self, 'size', 0)\n"
           "    def show(self):\n"
           "        return vars(self), type(self).__name__\n"
           "model = Box()\nmodel.n = 3\nmodel.eval = None\n"
           "import re\npat = re.compile('a+')\n")
    assert run(src, tasks=[]).suspicious == []


def test_common_notebook_magics_and_shell_lines_are_not_flagged():
    src = "%load_ext autoreload\n%autoreload 2\n!pip install --quiet ml_dtypes\n!nvidia-smi\n%matplotlib inline\nx = 1"
    assert run(src, tasks=[]).suspicious == []
    r = run("!pip install x; kill -9 1\n%load_ext evil\n%run other.py", tasks=[])
    assert flags(r) == [(0, 1, "runs a shell command"), (0, 2, "magic %load_ext"), (0, 3, "magic %run")]


def test_a_student_name_that_shadows_a_builtin_is_not_the_builtin():
    r = run("def compile(model):\n    return model\ncompile(3)", tasks=[])
    assert r.suspicious == []


def test_instructor_cells_only_bind_names():
    hidden = ("import sys\nsys.modules['x'] = 1\nimport numpy as np\nexec('pass')", False)
    r = run(hidden, "np.array_equal = print", tasks=[])
    assert flags(r) == [(1, 1, "assigns to np.array_equal, inside an imported module")]


def test_magics_do_not_break_parsing():
    setup = ("try:\n    import scaledl\nexcept ModuleNotFoundError:\n"
             "    %pip install --quiet scaledl\n    import scaledl\n")
    timed = "%time from scaledl.numerics import quantize as q\nnp.info?\n"
    cellmagic = "%%time\ndef e4m3_round(x):\n    return q(x, 'e4m3')\n"
    r = run(setup, timed, cellmagic)
    assert r.suspicious == []
    assert bypass(r) == [(2, 3, "calls q (scaledl.numerics.quantize), the library's own answer")]


def test_a_cell_that_does_not_parse_is_skipped_and_flagged():
    r = run("def e4m3_round(x:\n    return x", HONEST)
    assert r.bypass == {}
    assert flags(r) == [(0, 1, "does not parse as Python, so it was not reviewed")]


def test_hostile_source_never_crashes_the_review():
    deep = "def e4m3_round(x):\n    return " + " + ".join(["x"] * 1500)       # parses; too deep to walk
    deeper = "y = " + " + ".join(["x"] * 30_000)                                 # too deep to parse
    r = run(deep, deeper, "y = 'a\x00b'", "(" * 300 + "1" + ")" * 300)
    assert r.bypass == {}
    assert flags(r) == [(0, 0, "Task 1.1: its code is nested too deeply to review"),
                        (0, 1, "nested too deeply to review")] + \
        [(cell, 1, "does not parse as Python, so it was not reviewed") for cell in (1, 2, 3)]


def test_the_grader_imports_nothing_that_runs_a_program():
    import sys

    before = set(sys.modules)
    run("from scaledl.__main__ import main\nimport numpy.__main__", "def e4m3_round(x):\n    return main(x)")
    assert not {m for m in set(sys.modules) - before if m.endswith("__main__")}


# --- the real solutions: nothing at all ------------------------------------------------------------------------

SOLUTIONS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "labs", "solutions", "lab*.ipynb")))


def solution_cells(path):
    import nbformat

    cells = []
    for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type == "code":
            meta = cell.metadata.get("nbgrader", {})
            cells.append((i, cell.source, bool(meta.get("solution")) or not meta))
    return cells


@pytest.mark.parametrize("path", SOLUTIONS, ids=[os.path.basename(p)[:5] for p in SOLUTIONS])
def test_solution_notebooks_give_no_finding(path):
    lab = os.path.basename(path)[:5]
    try:
        tasks = task_modules.for_lab(lab)
    except Exception as err:  # another helper may still be writing this lab's task module
        pytest.skip(f"scaledl.course.tasks.{lab} does not import yet: {type(err).__name__}: {err}")
    r = review(solution_cells(path), tasks.values())
    assert r.bypass == {} and r.suspicious == [], (r.bypass, r.suspicious)


def test_solutions_are_actually_reviewed():
    """The lab03 solution with its answer swapped for the library's: the review must notice."""
    path = next(p for p in SOLUTIONS if os.path.basename(p).startswith("lab03"))
    cells = [(i, src.replace("    a = np.abs(x.astype(np.float64))", "    return quantize(x, 'e4m3')")
              if "def e4m3_round" in src else src, student) for i, src, student in solution_cells(path)]
    r = review(cells, task_modules.for_lab("lab03").values())
    assert list(r.bypass) == ["task_1_1"]


def test_a_name_the_task_replaces_is_not_followed():
    """lab06's Task 1.2 runs with the reference top_k swapped in: the student's top_k, even one that calls the
    library, is Task 1.1's business (``Task.replaced``), while anything else the method calls is still read."""
    cells = ("from scaledl.numerics import quantize\n"
             "def top_k(v, k):\n    return quantize(v, 'e4m3')[:k]\n"
             "class EF:\n    def compress(self, g):\n        return top_k(g, 3)\n",)
    plain = make_task(functions=("EF.compress",), grade_id="task_1_2")
    assert bypass(run(*cells, tasks=[plain]), "task_1_2")                   # followed into top_k: flagged
    alone = make_task(functions=("EF.compress",), grade_id="task_1_2", replaced=("top_k",))
    assert bypass(run(*cells, tasks=[alone]), "task_1_2") == []
    direct = cells[0].replace("return top_k(g, 3)", "return quantize(g, 'e4m3')")
    assert bypass(run(direct, tasks=[alone]), "task_1_2")                   # its own call still is
