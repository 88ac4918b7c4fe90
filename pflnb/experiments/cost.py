"""What a reproduction costs, from its run logs: engine time per notebook and per kind of run, and the critical path.

``pflnb reproduce`` keeps, beside the executed notebooks, one run log per notebook (``runs/<notebook>.jsonl``: every
job the notebook asked for, in order, with the ``stage`` of the :func:`~pflnb.experiments.executors.execute` call
that ran it, its ``kind`` and, when it was computed, its ``seconds``). :func:`reproduction_cost` reads those logs
and ``reproduce.log`` and accounts for a *cold* reproduction, also after a warm one:

- a job's cost is its computed seconds where the log has them, else the wall time its cached record holds
  (``wall_time_s``; a job whose record holds none is counted as untimed); a job that two notebooks ask for costs
  only in the first (a cold reproduction computes it once and the second loads it);
- evaluation: the seconds the engine's rounds spent in evaluation (``rounds[*].time.eval``), inside the engine time;
- per notebook, the stages run one after the other (each ``execute`` call waits for its jobs), a stage's jobs on
  ``workers`` workers in the order submitted (:func:`makespan`): the engine's share of the notebook's wall time, and
  its critical path (the sum over stages of the longest job: what unlimited workers would still take);
- for the reproduction, a lower bound had every job been one job graph: the larger of the engine time over the
  workers and the longest notebook's critical path.

``benchmarks/reproduce_cost.py`` prints it.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pflnb.experiments.reproduce import LOG_NAME, RUNS_DIR, read_events

KINDS = ("tuning", "verdict", "other")  # an execute call without a kind (a notebook's own jobs) counts as "other"
_LINE = re.compile(r"^(?P<name>[^:\s]+\.ipynb): (?P<status>ok|FAILED) in (?P<seconds>\d+) s")


def makespan(costs: Sequence[float], workers: int) -> float:
    """The time ``workers`` workers take for jobs of ``costs`` handed out in order, each to the first free worker
    (how a process pool runs one ``execute`` call)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    free = [0.0] * min(workers, max(len(costs), 1))
    for cost in costs:
        heapq.heapreplace(free, free[0] + cost)
    return max(free)


def notebook_times(executed: Path) -> dict[str, float]:
    """Each notebook's wall time (s) in the last invocation of ``executed/reproduce.log`` that executed it (a notebook
    re-executed alone later counts with its later time: its run log ``runs/<notebook>.jsonl`` is that execution's)."""
    log = executed / LOG_NAME
    if not log.exists():
        raise FileNotFoundError(f"{log} not found: run pflnb reproduce (make reproduce) first")
    times: dict[str, float] = {}
    for line in log.read_text().splitlines():
        if m := _LINE.match(line):
            times[m["name"]] = float(m["seconds"])
    return times


def _record_times(results: Path, event: dict[str, Any]) -> tuple[float | None, float]:
    """(wall seconds, evaluation seconds) of the cached record of ``event``'s job: None when it holds no wall time."""
    matches = sorted(results.glob(f"*/*-{event['key']}.json"))
    preferred = [p for p in matches if p.parent.name == event.get("profile")]
    path = (preferred or matches or [None])[0]
    if path is None:
        return None, 0.0
    record = json.loads(path.read_text())
    rounds = record.get("rounds")  # an engine run's rounds; other jobs (FedFac's paired timing) keep a count there
    evaluation = sum(float(r.get("time", {}).get("eval", 0.0)) for r in rounds) if isinstance(rounds, list) else 0.0
    wall = record.get("wall_time_s")
    return (float(wall) if wall is not None else None), evaluation


@dataclass
class NotebookCost:
    """One notebook's share of a cold reproduction (seconds)."""

    name: str
    wall: float | None
    jobs: int = 0
    repeated: int = 0  # jobs asked for before (here or in an earlier notebook): no cost here
    untimed: int = 0
    engine: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    evaluation: float = 0.0
    scheduled: float = 0.0  # the engine's stages one after the other, each on the workers
    critical: float = 0.0  # the sum over stages of the longest job

    @property
    def engine_total(self) -> float:
        return sum(self.engine.values())


def reproduction_cost(executed: Path | str, results: Path | str, workers: int = 2) -> list[NotebookCost]:
    """The cold cost of the reproduction executed into ``executed`` (its ``reproduce.log`` and ``runs/`` logs), its
    records in ``results``, on ``workers`` workers: one :class:`NotebookCost` per notebook, in the order executed."""
    executed, results = Path(executed), Path(results)
    walls = notebook_times(executed)
    seen: set[str] = set()
    out = []
    for name, wall in walls.items():
        path = executed / RUNS_DIR / f"{Path(name).stem}.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path} not found: the run logs are kept by pflnb reproduce since this tool exists")
        cost = NotebookCost(name, wall)
        stages: dict[str, list[float]] = {}
        for event in read_events(path):
            if event["event"] not in ("loaded", "computed"):
                continue
            cost.jobs += 1
            if event["key"] in seen:
                cost.repeated += 1
                continue
            seen.add(event["key"])
            wall_s, evaluation = _record_times(results, event)
            seconds = event.get("seconds") if event["event"] == "computed" else None
            seconds = seconds if seconds is not None else wall_s
            if seconds is None:
                cost.untimed += 1
                continue
            kind = event.get("kind") if event.get("kind") in KINDS else "other"
            cost.engine[kind] += seconds
            cost.evaluation += evaluation
            stages.setdefault(event.get("stage", "?"), []).append(seconds)
        cost.scheduled = sum(makespan(s, workers) for s in stages.values())
        cost.critical = sum(max(s) for s in stages.values())
        out.append(cost)
    return out


def lower_bound(costs: Sequence[NotebookCost], workers: int = 2) -> float:
    """The least time the engine work of ``costs`` could take as one job graph on ``workers`` workers: the larger of
    its total over the workers and the longest notebook's critical path."""
    total = sum(c.engine_total for c in costs)
    return max(total / workers, max((c.critical for c in costs), default=0.0))


def cost_table(costs: Sequence[NotebookCost], workers: int = 2) -> str:
    """The costs as a Markdown table (minutes), with a total row and the one-job-graph bound below it."""

    def m(s: float | None) -> str:
        return "–" if s is None else f"{s / 60:.1f}"

    head = (
        "| notebook | wall | engine | tuning | verdict seeds | other | evaluation | engine scheduled | critical path "
        "| jobs (repeated, untimed) |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for c in [*costs, _total(costs)]:
        rows.append(
            f"| {c.name} | {m(c.wall)} | {m(c.engine_total)} | {m(c.engine['tuning'])} | {m(c.engine['verdict'])} "
            f"| {m(c.engine['other'])} | {m(c.evaluation)} | {m(c.scheduled)} | {m(c.critical)} "
            f"| {c.jobs} ({c.repeated}, {c.untimed}) |"
        )
    bound = lower_bound(costs, workers)
    return (
        head
        + "\n".join(rows)
        + f"\n\nMinutes; {workers} workers. As one job graph the engine work would need at least {m(bound)} min "
        "(its total over the workers, or the longest notebook's critical path).\n"
    )


def _total(costs: Sequence[NotebookCost]) -> NotebookCost:
    walls = [c.wall for c in costs]
    total = NotebookCost("total", None if any(w is None for w in walls) else sum(walls))  # type: ignore[arg-type]
    for c in costs:
        total.jobs += c.jobs
        total.repeated += c.repeated
        total.untimed += c.untimed
        total.evaluation += c.evaluation
        total.scheduled += c.scheduled
        total.critical += c.critical
        for k in KINDS:
            total.engine[k] += c.engine[k]
    return total
