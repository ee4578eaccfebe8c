"""Reading what the CUDA assembler made of a kernel: ``ptxas -v`` resource lines and ``nvdisasm`` SASS (text only).

:mod:`scaledl.kernels.static_report` compiles each kernel to PTX, assembles it with ``ptxas -v`` and
disassembles the cubin with ``nvdisasm``; this module turns those two texts into numbers, so it is tested on
captured samples where the tools are missing.

* :func:`parse_ptxas` reads, per kernel: registers, spill stores/loads, stack frame, static shared memory,
  barriers.
* :func:`parse_sass` reads instructions and labels; :func:`inner_loop` finds the loop that matters, the one
  with the most FFMAs (a backward branch and its target; on a tie, the shortest body, i.e. the innermost),
  and :class:`LoopSummary` counts what one trip of it issues: FFMAs, global and shared loads by width, shared
  stores, integer/address instructions.

Counts are static: every instruction between the branch target and the branch, once, whether or not its
predicate is true at run time (a predicated-off instruction still takes an issue slot).

>>> text = '''
... .L_x_1:
...         /*0100*/                   LDS.128 R4, [R2] ;
...         /*0110*/                   FFMA R8, R4, R5, R8 ;
...         /*0120*/                   IADD3 R2, R2, 0x10, RZ ;
...         /*0130*/               @P0 BRA `(.L_x_1) ;
... '''
>>> loop = inner_loop(parse_sass(text))
>>> loop.ffma, loop.lds, loop.integer, loop.instructions
(1, {128: 1}, 1, 4)
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["PtxasInfo", "parse_ptxas", "Instruction", "parse_sass", "LoopSummary", "loops", "inner_loop",
           "summarize", "INTEGER_OPCODES", "LoadsInFlight", "loads_in_flight", "SteadyState",
           "steady_state", "int64_instructions"]


# ------------------------------------------------------------------------------------------- ptxas -v
@dataclass(frozen=True)
class PtxasInfo:
    """What ``ptxas -v`` says about one function."""

    name: str
    registers: int
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    stack_bytes: int = 0
    shared_bytes: int = 0  # static shared memory (dynamic shared memory is a launch parameter)
    barriers: int = 0

    @property
    def spills(self) -> bool:
        return bool(self.spill_store_bytes or self.spill_load_bytes)


_FUNCTION = re.compile(r"(?:Compiling entry function|Function properties for) '?([^'\s]+)'?")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(text: str) -> dict[str, PtxasInfo]:
    """``{function name: PtxasInfo}`` from the output of ``ptxas -v`` (stdout and stderr together).

    Raises:
        ValueError: the text holds no "Used N registers" line (not ptxas -v output, or ptxas failed).
    """
    found: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        m = _FUNCTION.search(line)
        if m:
            current = m.group(1)
            found.setdefault(current, {"name": current})
            continue
        if current is None:
            continue
        m = _PROPS.search(line)
        if m:
            found[current].update(stack_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)),
                                  spill_load_bytes=int(m.group(3)))
        m = _USED.search(line)
        if m:
            found[current]["registers"] = int(m.group(1))
            b, s = _BARRIERS.search(line), _SMEM.search(line)
            found[current].update(barriers=int(b.group(1)) if b else 0, shared_bytes=int(s.group(1)) if s else 0)
    infos = {name: PtxasInfo(**f) for name, f in found.items() if "registers" in f}
    if not infos:
        raise ValueError(f"text: no 'Used N registers' line, is this ptxas -v output? It begins {text[:200]!r}")
    return infos


# ------------------------------------------------------------------------------------------------- SASS
@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: ``/*0470*/ @!P0 BRA `(.L_x_0) ;`` -> address 0x470, predicate "@!P0", ..."""

    address: int
    opcode: str  # with its modifiers: "LDG.E.128", "IMAD.MOV.U32"
    operands: str = ""
    predicate: str = ""

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def width_bits(self) -> int:
        """Access width of a load or store: the ``.64``/``.128`` (or ``.U8``...) modifier, else 32."""
        for mod in self.opcode.split(".")[1:]:
            if mod in ("64", "128"):
                return int(mod)
            if mod in ("U8", "S8"):
                return 8
            if mod in ("U16", "S16"):
                return 16
        return 32

    @property
    def target(self) -> str | None:
        """The label a branch jumps to, or None."""
        m = re.search(r"`\(([^)]+)\)", self.operands)
        return m.group(1) if m else None


@dataclass(frozen=True)
class Sass:
    """A disassembled function: instructions in order, and each label's position in that list."""

    instructions: tuple[Instruction, ...]
    labels: dict[str, int] = field(default_factory=dict)


_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
_LABEL = re.compile(r"^(\.L\w+):\s*$")


def parse_sass(text: str) -> Sass:
    """Instructions and labels of ``nvdisasm -c`` output (one kernel; labels are unique in a cubin).

    Raises:
        ValueError: no instruction found.
    """
    instructions: list[Instruction] = []
    labels: dict[str, int] = {}
    for line in text.splitlines():
        m = _LABEL.match(line.strip())
        if m:
            labels[m.group(1)] = len(instructions)
            continue
        m = _INSTR.match(line)
        if m:
            instructions.append(Instruction(int(m.group(1), 16), m.group(3), m.group(4).strip(),
                                            (m.group(2) or "").strip()))
    if not instructions:
        raise ValueError(f"text: no SASS instruction found, is this nvdisasm output? It begins {text[:200]!r}")
    return Sass(tuple(instructions), labels)


# Integer and address arithmetic: what a loop spends on indices and pointers instead of FMAs. The uniform
# datapath's forms (UIADD3, ULEA, ...) count too: they take issue slots like the others.
INTEGER_OPCODES = frozenset({"IMAD", "IADD3", "IADD", "VIADD", "LEA", "LOP3", "LOP", "ISETP", "SEL", "SHF", "SHL",
                             "SHR", "MOV", "IABS", "IMNMX", "VIMNMX", "PRMT", "CS2R", "BMSK", "BREV", "FLO",
                             "POPC", "IDP"})
_MEMORY = ("LDG", "STG", "LDS", "STS", "LDL", "STL")


def _is_integer(base: str) -> bool:
    return base in INTEGER_OPCODES or (base.startswith("U") and base[1:] in INTEGER_OPCODES)


@dataclass(frozen=True)
class LoopSummary:
    """What one trip of a loop issues (static counts, see the module docstring)."""

    start: int  # address of the branch target (the loop's first instruction)
    end: int  # address of the backward branch
    instructions: int
    ffma: int
    integer: int  # integer and address instructions (INTEGER_OPCODES)
    ldg: dict[int, int]  # global loads by width in bits: {32: n, 64: n, 128: n}
    stg: dict[int, int]
    lds: dict[int, int]  # shared loads by width
    sts: dict[int, int]  # shared stores by width
    local: int  # LDL/STL: local memory, where spilled registers live
    fp64: int  # DFMA, DADD, DMUL, ...
    barriers: int
    opcodes: dict[str, int]  # every base opcode and its count

    @property
    def ffma_share(self) -> float:
        """FFMAs over all instructions of one trip: the ceiling this loop puts on the FP32 rate."""
        return self.ffma / self.instructions

    @property
    def integer_per_ffma(self) -> float:
        return self.integer / self.ffma if self.ffma else float("inf")

    @property
    def global_loads(self) -> int:
        return sum(self.ldg.values())

    @property
    def widest_global_load(self) -> int:
        return max(self.ldg, default=0)


def summarize(body, start: int | None = None, end: int | None = None) -> LoopSummary:
    """Count the instructions of ``body`` (a sequence of :class:`Instruction`)."""
    body = list(body)
    by_width: dict[str, Counter] = {op: Counter() for op in _MEMORY}
    opcodes: Counter = Counter()
    for ins in body:
        opcodes[ins.base] += 1
        if ins.base in by_width:
            by_width[ins.base][ins.width_bits] += 1
    return LoopSummary(
        start=body[0].address if start is None else start, end=body[-1].address if end is None else end,
        instructions=len(body), ffma=opcodes["FFMA"],
        integer=sum(n for op, n in opcodes.items() if _is_integer(op)),
        ldg=dict(sorted(by_width["LDG"].items())), stg=dict(sorted(by_width["STG"].items())),
        lds=dict(sorted(by_width["LDS"].items())), sts=dict(sorted(by_width["STS"].items())),
        local=sum(by_width["LDL"].values()) + sum(by_width["STL"].values()),
        fp64=sum(n for op, n in opcodes.items() if op in ("DFMA", "DADD", "DMUL", "DSETP", "DMNMX")),
        barriers=opcodes["BAR"], opcodes=dict(opcodes))


def loops(sass: Sass) -> list[LoopSummary]:
    """Every loop: a branch whose target label comes before it, summarised from target to branch."""
    found = []
    for i, ins in enumerate(sass.instructions):
        if ins.base != "BRA" or ins.target not in sass.labels:
            continue
        t = sass.labels[ins.target]
        if t < i:  # a branch to itself is the trap after EXIT, not a loop
            found.append(summarize(sass.instructions[t:i + 1]))
    return found


def inner_loop(sass: Sass) -> LoopSummary | None:
    """The innermost loop that does the arithmetic: among the loops with FFMAs, one with no such loop inside
    it, the one with the most FFMAs (then the shortest). With no FFMA in any loop: the innermost loop with the
    most global loads. None for straight-line code.

    Innermost, so that a tile loop around two copies of an unrolled k loop is not taken for one trip of it."""
    found = loops(sass)

    def inside(a, b):  # a strictly within b
        return a is not b and b.start <= a.start and a.end <= b.end

    with_ffma = [lp for lp in found if lp.ffma]
    candidates = [lp for lp in with_ffma if not any(inside(o, lp) for o in with_ffma)]
    if not candidates:
        candidates = [lp for lp in found if not any(inside(o, lp) for o in found)]
    if not candidates:
        return None
    return max(candidates, key=lambda lp: (lp.ffma, lp.global_loads, -lp.instructions))


# --------------------------------------------------------------------------------------- loads in flight
@dataclass(frozen=True)
class LoadsInFlight:
    """How many global loads a thread has issued and not yet used, at most, and whether they span the loop
    that does the FMAs (a prefetch: the loads of the next tile fly while this one is multiplied)."""

    loads: int  # outstanding global loads at the busiest point (predicated alternatives count once)
    bytes: int  # their bytes, per thread
    over_inner_loop: bool


_NO_DESTINATION = {"STS", "STG", "STL", "ST", "BAR", "BRA", "EXIT", "BSYNC", "BSSY", "WARPSYNC", "RED", "NOP",
                   "CALL", "RET", "MEMBAR", "DEPBAR"}
_REGISTER = re.compile(r"\bR(\d+)(\.64)?\b")


def _registers(text: str, count: int = 1) -> set[int]:
    """Register numbers an operand names: ``R4`` (``count`` from R4 on), ``[R2.64]`` (R2 and R3)."""
    out = set()
    for m in _REGISTER.finditer(text):
        n = int(m.group(1))
        out.update(range(n, n + max(count, 2 if m.group(2) else 1)))
    return out


def _reads(ins: Instruction) -> set[int]:
    ops = [o.strip() for o in ins.operands.split(",")]
    if ins.base not in _NO_DESTINATION:
        ops = ops[1:]
    regs = set()
    for k, op in enumerate(ops):  # a store's last operand is its value: .64/.128 names 2/4 registers
        wide = ins.base in ("STS", "STG", "STL", "ST") and k == len(ops) - 1
        regs |= _registers(op, ins.width_bits // 32 if wide else 1)
    return regs


def loads_in_flight(sass: Sass) -> LoadsInFlight:
    """Outstanding global loads per thread, from each LDG to the first instruction that reads its register.

    A load whose value is not read before its loop's backward branch is followed around the loop (a prefetch
    read at the top of the next trip). LDGs that write the same registers while both are outstanding are the
    alternatives of one load (``@P0`` four scalar loads, ``@!P0`` one LDG.E.128): they count once, at the
    widest. Straight-line order is assumed; branches other than loop back edges are ignored.
    """
    ins = sass.instructions
    spans = []  # (target, branch) index pairs of loops
    for i, x in enumerate(ins):
        t = sass.labels.get(x.target) if x.base == "BRA" else None
        if t is not None and t < i:
            spans.append((t, i))

    def live(i: int, regs: set[int]) -> set[int]:
        """Instruction indices from the load to its first use."""
        loop = min((sp for sp in spans if sp[0] <= i <= sp[1]), key=lambda sp: sp[1] - sp[0], default=None)
        order = list(range(i + 1, len(ins)))
        if loop is not None:  # to the end of the loop, around it, then on past it
            order = list(range(i + 1, loop[1] + 1)) + list(range(loop[0], i)) + list(range(loop[1] + 1, len(ins)))
        seen = {i}
        for j in order:
            seen.add(j)
            if _reads(ins[j]) & regs:
                break
        return seen

    groups: list[tuple[set[int], set[int], int]] = []  # (registers, live indices, bytes)
    for i, x in enumerate(ins):
        if x.base != "LDG":
            continue
        ops = x.operands.split(",")
        regs = _registers(ops[0], max(x.width_bits // 32, 1))
        span = live(i, regs)
        nbytes = x.width_bits // 8
        same = [g for g in groups if g[0] & regs and i in g[1]]  # the same registers, still outstanding:
        for g in same:  # alternatives of one load (or its pieces), merged into one
            groups.remove(g)
            regs, span, nbytes = regs | g[0], span | g[1], max(nbytes, g[2], len(regs | g[0]) * 4)
        groups.append((regs, span, nbytes))
    if not groups:
        return LoadsInFlight(0, 0, False)
    best_loads, best_bytes = 0, 0
    for g in groups:
        for p in g[1]:
            if ins[p].base != "LDG":
                continue
            here = [h for h in groups if p in h[1]]
            best_loads, best_bytes = max(best_loads, len(here)), max(best_bytes, sum(h[2] for h in here))
    inner = inner_loop(sass)
    over = False
    if inner is not None and inner.ffma:
        body = {k for k, x in enumerate(ins) if inner.start <= x.address <= inner.end}
        over = any(body <= g[1] for g in groups)
    return LoadsInFlight(best_loads, best_bytes, over)


# ------------------------------------------------------------------------------ whole-kernel steady state
_INT64_MODIFIERS = {"64", "U64", "S64", "WIDE", "X", "EX"}
_PREDICATE = re.compile(r"^!?U?P[0-6]$")


def _integer_base(base: str) -> str | None:
    """The integer opcode ``base`` is (``UIADD3`` -> ``IADD3``), or None."""
    if base in INTEGER_OPCODES:
        return base
    if base.startswith("U") and base[1:] in INTEGER_OPCODES:
        return base[1:]
    return None


def int64_instructions(body) -> list[int]:
    """Positions in ``body`` (a sequence of :class:`Instruction`) of the instructions that do 64-bit integer
    arithmetic, by this rule, on the uniform datapath too (``UIADD3.X`` as ``IADD3.X``):

    * an integer opcode with a 64-bit modifier: ``.64``, ``.U64``/``.S64`` (``SHF.L.U64.HI``), ``.WIDE``
      (``IMAD.WIDE.U32``: a 64-bit product or sum);
    * the high half of a 64-bit operation: ``.X`` (``IADD3.X``, ``IMAD.X``, ``LEA.HI.X``: carry in) and ``.EX``
      (``ISETP...EX``: the compare of the high words);
    * the low half: an integer instruction that writes a carry predicate (``IADD3 R0, P0, R2, R4, RZ``,
      ``LEA R2, P1, ...``: a predicate among its destinations), and the ``ISETP`` whose predicate an ``.EX``
      compare reads as its last operand (the low words' compare).

    So a 64-bit add costs 2, a 64-bit compare 2, an ``IMAD.WIDE`` 1.

    >>> body = parse_sass('''
    ...         /*0000*/                   IADD3 R4, P0, R4, 0x8, RZ ;
    ...         /*0010*/                   IMAD.X R5, RZ, RZ, R5, P0 ;
    ...         /*0020*/                   ISETP.GE.U32.AND P1, PT, R4, R6, PT ;
    ...         /*0030*/                   ISETP.GE.U32.AND.EX P1, PT, R5, RZ, PT, P1 ;
    ...         /*0040*/                   IMAD.WIDE R2, R0, 0x4, R8 ;
    ...         /*0050*/                   IADD3 R0, R0, 0x1, RZ ;
    ...         /*0060*/                   FFMA R1, R2, R3, R1 ;
    ... ''').instructions
    >>> int64_instructions(body)
    [0, 1, 2, 3, 4]
    """
    body = list(body)
    found = set()
    for k, ins in enumerate(body):
        base = _integer_base(ins.base)
        if base is None:
            continue
        mods = set(ins.opcode.split(".")[1:])
        ops = [o.strip() for o in ins.operands.split(",")]
        if mods & _INT64_MODIFIERS:
            found.add(k)
        elif base in ("IADD3", "LEA", "IADD", "IMAD") and len(ops) > 1 and _PREDICATE.match(ops[1]):
            found.add(k)  # a carry out: the low half of a 64-bit add
        if base == "ISETP" and "EX" in mods and ops and _PREDICATE.match(ops[-1].lstrip("!")):
            low = ops[-1].lstrip("!")
            for j in range(k - 1, -1, -1):  # the compare that wrote it
                prev = body[j]
                if _integer_base(prev.base) == "ISETP" and prev.operands.split(",")[0].strip() == low:
                    found.add(j)
                    break
    return sorted(found)


@dataclass(frozen=True)
class SteadyState:
    """What a kernel issues per trip of its steady-state loop nest (see :func:`steady_state`)."""

    instructions: int  # per outer trip: the inner loop times inner_trips, plus the outer loop's path around it
    ffma: int
    int64: int  # 64-bit integer instructions (int64_instructions) in the same count
    inner_instructions: int  # one trip of the inner loop (its steady-state path)
    inner_ffma: int
    inner_trips: int  # trips of the inner loop per outer trip (1 where there is no outer loop)
    inner_trips_known: bool  # False: no outer loop's count was given or read, 1 assumed
    around: int  # instructions of the outer loop outside the inner loop, on its path (0 without an outer loop)
    outer: bool  # an enclosing loop was found (a GEMM's tile loop around its k loop)
    elements_per_trip: int | None = None
    opcodes: dict = field(default_factory=dict, compare=False)  # base opcode -> count, in the same count

    @property
    def per_element(self) -> float | None:
        return self.instructions / self.elements_per_trip if self.elements_per_trip else None

    @property
    def ffma_share(self) -> float:
        """FFMAs over all instructions of one outer trip: the issue ceiling of the whole tile."""
        return self.ffma / self.instructions if self.instructions else 0.0

    def describe(self) -> str:
        head = (f"{self.inner_trips} x {self.inner_instructions} (inner loop) + {self.around} around it = "
                f"{self.instructions} instructions per tile" if self.outer
                else f"{self.instructions} instructions per trip")
        if not self.inner_trips_known:
            head += " (inner trips unknown: 1 assumed)"
        per = f", {self.per_element:.1f} per element" if self.per_element is not None else ""
        share = f", FFMA {self.ffma} ({self.ffma_share:.0%})" if self.ffma else ""
        return f"{head}{per}{share}, {self.int64} of 64-bit integer arithmetic"


def _path(sass: Sass, first: int, last: int, skip: tuple[int, int] | None = None, *,
          to_exit: bool = False) -> list[int]:
    """The steady-state path from ``first`` to the back edge ``last`` (indices into ``sass.instructions``).

    Forward branches are followed or not; backward branches inside are not taken; a branch out of
    [first, last] ends its path (the code there is a slow path, not the steady state); ``skip`` = (start, end)
    of the inner loop, one block entered at its start and left after its end (counted by the caller);
    ``to_exit``: straight-line code (no loop), paths end at an unconditional EXIT instead of at ``last``.

    Among the paths, the one that loads the most global bytes (every LDG on it counted, predicated or not: it
    takes an issue slot), then with the fewest LDG instructions (the widest loads), then the longest. Interior
    tiles load a whole tile with the widest loads, while a matrix's edges take guarded scalar paths or skip
    loads; and the other branches go around the main computation to special cases (NaN, zero, infinity), so
    an ordinary element takes the long way."""
    ins = sass.instructions
    best: dict[int, tuple[int, int, int, int | None]] = {}  # index -> (bytes, -LDGs, instructions, next index)

    def own(x):
        load = x.base == "LDG"
        return ((x.width_bits // 8) if load else 0, -int(load), 1)

    for i in range(last, first - 1, -1):
        if skip is not None and skip[0] < i <= skip[1]:
            continue
        x = ins[i]
        if (i == last and not to_exit) or (to_exit and x.base == "EXIT" and not x.predicate):
            best[i] = (*own(x), None)
            continue
        if skip is not None and i == skip[0]:
            succ, mine = [skip[1] + 1], (0, 0, 0)
        else:
            mine, succ = own(x), []
            if x.base == "BRA" and x.target in sass.labels:
                t = sass.labels[x.target]
                if t > i:
                    succ.append(t)
                if x.predicate or "," in x.operands.split("`")[0] or t <= i:  # conditional, or a back edge
                    succ.append(i + 1)
            elif not (x.base == "EXIT" and not x.predicate):
                succ.append(i + 1)
        options = [best[s][:3] + (s,) for s in succ if first <= s <= last and s in best]
        if not options:
            continue
        b = max(options)
        best[i] = (b[0] + mine[0], b[1] + mine[1], b[2] + mine[2], b[3])
    if first not in best:  # no path stays in the body: count it all, once
        return [k for k in range(first, last + 1) if skip is None or not skip[0] <= k <= skip[1]]
    out, i = [], first
    while i is not None:
        if skip is None or i != skip[0]:
            out.append(i)
        i = best[i][3]
    return out


def _loop_spans(sass: Sass) -> list[tuple[int, int]]:
    return [(sass.labels[x.target], i) for i, x in enumerate(sass.instructions)
            if x.base == "BRA" and x.target in sass.labels and sass.labels[x.target] < i]


def steady_state(sass_text: str, *, elements_per_trip: int | None = None,
                 inner_trips: int | None = None) -> SteadyState:
    """The steady-state loop nest of a kernel as issued, from its SASS (``nvdisasm -c`` text).

    The inner loop is :func:`inner_loop`'s; the outer loop is the smallest loop around it (a GEMM's loop over
    BK-wide tiles: shared stores, barriers, the next tile's loads, address and bounds arithmetic). Each is
    counted along its steady-state path (:func:`_path`: through the branches, the way that loads a whole
    tile with the widest loads and issues the fewest instructions; predicated-off instructions count, they take
    issue slots). Per outer trip: ``inner_trips`` x the inner path + the outer path around it.

    ``inner_trips`` is not read from the SASS (Numba's loop counters are 64-bit down-counters whose start is
    set outside the loop): the caller passes it, e.g. a GEMM's FFMAs per tile over the inner loop's FFMAs per
    trip (:mod:`scaledl.kernels.static_report` does); without it 1 is assumed and ``inner_trips_known`` is
    False. With no outer loop the steady state is one trip of the inner loop (a grid-stride loop's trip:
    ``elements_per_trip`` elements, given by the caller, gives ``per_element``); with no loop at all (a thread
    per element, or a few), the path from the kernel's entry to its EXIT that loads the most, the same way.

    Raises:
        ValueError: a non-positive ``elements_per_trip``/``inner_trips``.
    """
    for name, v in (("elements_per_trip", elements_per_trip), ("inner_trips", inner_trips)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            raise ValueError(f"{name}={v!r}: expected a positive int or None")
    sass = parse_sass(sass_text)
    inner = inner_loop(sass)
    index = {x.address: k for k, x in enumerate(sass.instructions)}
    if inner is None:  # straight-line code (a thread an element): the kernel's path from entry to EXIT
        span = (0, len(sass.instructions) - 1)
        inner_idx = _path(sass, *span, to_exit=True)
    else:
        span = (index[inner.start], index[inner.end])
        inner_idx = _path(sass, *span)
    around = [s for s in _loop_spans(sass) if s[0] <= span[0] and span[1] <= s[1] and s != span] if inner else []
    ins = sass.instructions
    inner_body = [ins[k] for k in inner_idx]
    if around:
        outer = min(around, key=lambda s: s[1] - s[0])
        outer_idx = _path(sass, *outer, skip=span)
        trips, known = (inner_trips, True) if inner_trips is not None else (1, False)
    else:
        outer_idx, trips, known = [], 1, True
    outer_body = [ins[k] for k in outer_idx]
    opcodes: Counter = Counter()
    for x in inner_body:
        opcodes[x.base] += trips
    for x in outer_body:
        opcodes[x.base] += 1
    inner_ffma = sum(x.base == "FFMA" for x in inner_body)
    return SteadyState(
        instructions=trips * len(inner_body) + len(outer_body),
        ffma=trips * inner_ffma + sum(x.base == "FFMA" for x in outer_body),
        int64=trips * len(int64_instructions(inner_body)) + len(int64_instructions(outer_body)),
        inner_instructions=len(inner_body), inner_ffma=inner_ffma, inner_trips=trips, inner_trips_known=known,
        around=len(outer_body), outer=bool(around), elements_per_trip=elements_per_trip, opcodes=dict(opcodes))
