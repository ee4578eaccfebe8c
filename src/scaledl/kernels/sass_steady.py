"""The whole steady state of a kernel as issued, from its SASS (:mod:`scaledl.kernels.sass` parses it).

:func:`steady_state` counts what one outer trip issues: the innermost loop (:func:`~scaledl.kernels.sass.inner_loop`)
times its trip count, plus the code of the smallest loop around it that runs once per outer trip (for a GEMM, one
k tile: the shared-memory stores, barriers, address and bounds arithmetic and global loads around the inner
loop), or, in a kernel without a loop, the path from its entry to its exit. :func:`int64_instructions` finds the
64-bit integer instructions among them. A GEMM's issue ceiling is the FFMA share of the whole tile, not of the
inner loop alone.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from scaledl.kernels.sass import parse_sass, Sass, inner_loop, INTEGER_OPCODES

__all__ = ["SteadyState", "steady_state", "int64_instructions"]

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
