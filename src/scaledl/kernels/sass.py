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
           "summarize", "INTEGER_OPCODES", "LoadsInFlight", "loads_in_flight"]


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
