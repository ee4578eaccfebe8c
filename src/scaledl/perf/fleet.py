"""The automotive fleet example of NVIDIA's 2018 slides (seed 003): from cars on the road to years of
training on one GPU.

A fleet records sensor data; a small fraction of it is kept as a training set; training time grows in
proportion to the data. The slides give two scenarios and two tables (one Pascal GPU; one and ten DGX-1V).
This module recomputes both tables from named assumptions and checks which assumptions reproduce every
printed number, under rounding to nearest and under truncation.

>>> VERY_CONSERVATIVE.dataset_TB, CONSERVATIVE.dataset_TB
(104.0, 487.5)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

__all__ = ["FleetScenario", "VERY_CONSERVATIVE", "CONSERVATIVE", "SCENARIOS", "Printed", "PRINTED",
           "FleetRow", "recompute", "implied_speedup", "TB_per_gpu_day", "display_interval",
           "consistent_base_years", "cell_intervals", "cells_to_blame", "speedup_range", "bytes_per_book",
           "DGX1V_SPEEDUP", "NODES", "DAYS_PER_YEAR"]


@dataclass(frozen=True)
class FleetScenario:
    """Data collection: cars x TB per car-hour x hours per day x days, of which ``kept_fraction`` is kept."""

    name: str
    cars: int
    TB_per_car_hour: float
    days: int
    hours_per_day: float
    kept_fraction: float  # the slides' "data compression factor"

    @property
    def raw_TB(self) -> float:
        return self.cars * self.TB_per_car_hour * self.days * self.hours_per_day

    @property
    def dataset_TB(self) -> float:
        return self.raw_TB * self.kept_fraction


VERY_CONSERVATIVE = FleetScenario("very conservative", 100, 1.0, 260, 8, 0.0005)
CONSERVATIVE = FleetScenario("conservative", 125, 1.5, 325, 10, 0.0008)
SCENARIOS = (VERY_CONSERVATIVE, CONSERVATIVE)


@dataclass(frozen=True)
class Printed:
    """One number as the slides print it: which cell, its value, its unit and how many decimals it shows."""

    network: str
    scenario: str
    system: str  # "1 Pascal GPU", "1 DGX-1V", "10 DGX-1V"
    value: float
    unit: str  # "years" or "days"
    decimals: int


# Seed 003, both tables, cell by cell.
PRINTED = (
    Printed("InceptionV3", "very conservative", "1 Pascal GPU", 9.1, "years", 1),
    Printed("InceptionV3", "conservative", "1 Pascal GPU", 42.6, "years", 1),
    Printed("AlexNet", "very conservative", "1 Pascal GPU", 1.1, "years", 1),
    Printed("AlexNet", "conservative", "1 Pascal GPU", 5.4, "years", 1),
    Printed("InceptionV3", "very conservative", "1 DGX-1V", 166, "days", 0),
    Printed("InceptionV3", "conservative", "1 DGX-1V", 778, "days", 0),
    Printed("AlexNet", "very conservative", "1 DGX-1V", 21, "days", 0),
    Printed("AlexNet", "conservative", "1 DGX-1V", 98, "days", 0),
    Printed("InceptionV3", "very conservative", "10 DGX-1V", 16, "days", 0),
    Printed("InceptionV3", "conservative", "10 DGX-1V", 77, "days", 0),
    Printed("AlexNet", "very conservative", "10 DGX-1V", 2.1, "days", 1),
    Printed("AlexNet", "conservative", "10 DGX-1V", 9.8, "days", 1),
)

# Assumptions that reproduce the tables (derived in the chapter, checked in the tests):
DGX1V_SPEEDUP = 20.0  # one DGX-1V (8 V100) vs one Pascal GPU: 9.1 years x 365 / 166 days = 20.0
NODES = 10  # "10 DGX-1V's", assumed to scale perfectly
DAYS_PER_YEAR = 365  # 365-day years: with 365.25, 9.1 y x 4.6875 x 365.25 / 20 = 779 days, not the printed 778


@dataclass(frozen=True)
class FleetRow:
    """Recomputed training times for one network and one scenario."""

    network: str
    scenario: str
    dataset_TB: float
    pascal_gpu_years: float
    dgx1v_days: float
    dgx1v_x_nodes_days: float


def _scenario(name: str) -> FleetScenario:
    for s in SCENARIOS:
        if s.name == name:
            return s
    raise ValueError(f"scenario={name!r} is not one of {[s.name for s in SCENARIOS]}")


def recompute(network: str, base_years: float, scenario: FleetScenario, *, speedup: float = DGX1V_SPEEDUP,
              nodes: int = NODES, days_per_year: float = DAYS_PER_YEAR) -> FleetRow:
    """Training times for ``scenario`` when ``network`` takes ``base_years`` on one Pascal GPU for 104 TB.

    Time scales with dataset size; a DGX-1V is ``speedup`` Pascal GPUs; ``nodes`` DGX-1V scale perfectly.

    >>> r = recompute("AlexNet", 1.1, CONSERVATIVE)
    >>> round(r.pascal_gpu_years, 4)   # the slide prints 5.4
    5.1562
    """
    if not (base_years > 0 and speedup > 0 and nodes >= 1 and days_per_year > 0):
        raise ValueError(f"base_years, speedup, days_per_year must be > 0 and nodes >= 1; got base_years="
                         f"{base_years!r}, speedup={speedup!r}, nodes={nodes!r}, days_per_year={days_per_year!r}")
    years = base_years * scenario.dataset_TB / VERY_CONSERVATIVE.dataset_TB
    days = years * days_per_year / speedup
    return FleetRow(network, scenario.name, scenario.dataset_TB, years, days, days / nodes)


def implied_speedup(gpu_years: float, dgx_days: float, days_per_year: float = DAYS_PER_YEAR) -> float:
    """How many Pascal GPUs one DGX-1V is worth, from a pair of printed cells."""
    return gpu_years * days_per_year / dgx_days


def TB_per_gpu_day(dataset_TB: float, gpu_years: float, days_per_year: float = DAYS_PER_YEAR) -> float:
    """Dataset terabytes one Pascal GPU gets through per day, as the table implies."""
    return dataset_TB / (gpu_years * days_per_year)


def display_interval(printed: float, decimals: int, mode: str) -> tuple[float, float]:
    """The half-open range [lo, hi) of true values that print as ``printed`` with ``decimals`` decimals.

    ``mode`` is "round" (to nearest) or "truncate" (digits cut off).
    """
    step = 10.0 ** -decimals
    if mode == "round":
        return printed - step / 2, printed + step / 2
    if mode == "truncate":
        return printed, printed + step
    raise ValueError(f"mode={mode!r} must be 'round' or 'truncate'")


def consistent_base_years(network: str, mode: str, *, speedup: float = DGX1V_SPEEDUP, nodes: int = NODES,
                          days_per_year: float = DAYS_PER_YEAR) -> tuple[float, float] | None:
    """The range of one-Pascal-GPU years (104 TB) for which *every* printed cell of ``network`` is right.

    Each printed cell is base_years x factor (its factor follows from the scenario, the speed-up and the
    node count); the cell confines base_years to display_interval / factor; the answer is the intersection,
    or None when the cells contradict each other under these assumptions.
    """
    return _intersect([iv for _, iv in cell_intervals(network, mode, speedup=speedup, nodes=nodes,
                                                       days_per_year=days_per_year)])


def _intersect(intervals) -> tuple[float, float] | None:
    lo, hi = 0.0, math.inf
    for a, b in intervals:
        lo, hi = max(lo, a), min(hi, b)
    return (lo, hi) if lo < hi else None


def cell_intervals(network: str, mode: str, *, speedup: float = DGX1V_SPEEDUP, nodes: int = NODES,
                   days_per_year: float = DAYS_PER_YEAR) -> list[tuple[Printed, tuple[float, float]]]:
    """Each printed cell of ``network`` with the interval of base years (104 TB, one Pascal GPU) it allows."""
    cells = [p for p in PRINTED if p.network == network]
    if not cells:
        raise ValueError(f"network={network!r} is not in the table; it has InceptionV3 and AlexNet")
    out = []
    for p in cells:
        row = recompute(network, 1.0, _scenario(p.scenario), speedup=speedup, nodes=nodes,
                        days_per_year=days_per_year)
        factor = {"1 Pascal GPU": row.pascal_gpu_years, "1 DGX-1V": row.dgx1v_days,
                  "10 DGX-1V": row.dgx1v_x_nodes_days}[p.system]
        a, b = display_interval(p.value, p.decimals, mode)
        out.append((p, (a / factor, b / factor)))
    return out


def cells_to_blame(network: str, mode: str, k: int = 1, **kw) -> list[tuple[Printed, ...]]:
    """The sets of ``k`` printed cells of ``network`` whose removal makes the remaining cells consistent.

    Empty when every cell already agrees, or when no set of ``k`` cells can be blamed. Keyword arguments
    are those of :func:`cell_intervals`.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r}: expected a positive number of cells")
    cells = cell_intervals(network, mode, **kw)
    if _intersect([iv for _, iv in cells]) is not None:
        return []
    return [tuple(cells[i][0] for i in drop) for drop in itertools.combinations(range(len(cells)), k)
            if _intersect([iv for j, (_, iv) in enumerate(cells) if j not in drop]) is not None]


def speedup_range(mode: str = "truncate", lo: float = 15.0, hi: float = 25.0, steps: int = 10_001,
                  networks: tuple[str, ...] = ("InceptionV3", "AlexNet")) -> tuple[float, float] | None:
    """The smallest and largest DGX-1V speed-up (on a grid) for which every network's cells agree."""
    ok = [lo + (hi - lo) * i / (steps - 1) for i in range(steps)]
    ok = [s for s in ok if all(consistent_base_years(n, mode, speedup=s) for n in networks)]
    return (min(ok), max(ok)) if ok else None


def bytes_per_book(total_bytes: float = 100e12, books: float = 600e6) -> float:
    """What "100 terabytes equals 600 million books" takes a book to be, in bytes."""
    return total_bytes / books
