"""What running a declared experiment gives (:class:`ExperimentResult`: a tidy table, one row per run, the records
and the tuning behind them) and how claims read it: per-seed values of an arm in a cell, the tuning note, the seeds
whose arm collapsed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pflnb.experiments.claims import Untuned
from pflnb.experiments.declarations import _CELL_COLUMNS, EDGE_STEPS, Experiment, excluded


@dataclass
class ExperimentResult:
    """The runs of one experiment: ``table`` has one row per run (its labels, then the summary metrics of
    :func:`~pflnb.experiments.tables.summary_table`); ``records`` are the runs' records in the same order."""

    experiment: Experiment
    profile: str
    table: pd.DataFrame
    records: list[dict[str, Any]]
    tuning: pd.DataFrame | None = None

    def tuned(self, label: str) -> str:
        """Arm ``label``'s tuned values in words ('lr=0.03, mu=0.01'; '' without tuning), per setting or grid point
        where it was tuned more than once."""
        if self.tuning is None or self.tuning.empty:
            return ""
        source = self.experiment.tune.shared.get(label) if self.experiment.tune else None
        if source:
            return f"{self.tuned(source)} (the choice of {source})"
        chosen = self.tuning[(self.tuning["label"] == label) & self.tuning["chosen"]]
        names = [c for c in chosen.columns if c.startswith("tuned:")]
        cells = [c for c in chosen.columns if c in _CELL_COLUMNS or c in self.experiment.grid]
        parts = []
        for _, row in chosen.drop_duplicates([*cells, *names]).iterrows():
            values = ", ".join(f"{n[6:]}={row[n]}" for n in names if pd.notna(row[n]))
            parts.append((" ".join(str(row[c]) for c in cells) + ": " if cells else "") + values)
        return "; ".join(parts)

    def tuning_note(self, labels: Sequence[str]) -> str:
        """The claims' note on tuning: the grid, the tuning seeds, each arm's choice and the paper's stated values."""
        tune = self.experiment.tune
        if self.tuning is None or self.tuning.empty or tune is None:
            return ""
        seeds = " ".join(str(s) for s in tune.seeds[self.profile])
        chosen = []
        for label in labels:
            stated = tune.paper.get(label, tune.paper.get("*"))
            stated = f" (paper: {stated})" if stated else ""
            chosen.append(f"{label} {self.tuned(label)}{stated}")
        exp = self.experiment
        grid = tune.described(
            labels, self.profile, [exp.arm(l).method for l in labels], [exp.arm_optimizer(l, self.profile) for l in labels]
        )
        note = (
            f"{exp.name} tuned on mean best validation accuracy, seed(s) {seeds} (a value at which a seed diverged or "
            f"collapsed below the floor ruled out), over {grid}: " + "; ".join(chosen)
        )
        beyond = self.extended_values(labels)
        if beyond:
            note += (
                f" (grid-edge rule: a choice at an edge of its grid got one more value beyond that edge, up to "
                f"{EDGE_STEPS}, every arm alike; tried beyond the grid: {beyond})"
            )
        return note

    def extended_values(self, labels: Sequence[str]) -> str:
        """The values the grid-edge rule tried beyond the declared grid for the arms ``labels`` ('' for none)."""
        t = self.tuning
        if t is None or t.empty or "step" not in t.columns:
            return ""
        names = [c for c in t.columns if c.startswith("tuned:")]
        cells = [c for c in t.columns if c in _CELL_COLUMNS or c in self.experiment.grid]
        shown = []
        for _, row in t[(t.step > 0) & t["label"].isin(labels)].drop_duplicates([*cells, "label", "candidate"]).iterrows():
            values = ", ".join(f"{n[6:]}={row[n]}" for n in names if pd.notna(row[n]))
            shown.append(" ".join(str(row[c]) for c in (*cells, "label") if c in row) + f" {values}")
        return "; ".join(shown)

    def untuned(self, label: str, **where: Any) -> str:
        """Why arm ``label``'s runs (at ``where``) are untuned: its tuning cell (or the cell of the arm whose choice it
        takes) found no value that trained, every candidate diverged or collapsed on a tuning seed; '' otherwise."""
        t = self.tuning
        if t is None or t.empty or "best_val_acc" not in t.columns:
            return ""
        shared = self.experiment.tune.shared if self.experiment.tune is not None else {}
        source = shared.get(label, label)
        rows = t[t["label"] == source]
        for name, value in where.items():
            if name in rows.columns:
                rows = rows[rows[name] == value]
        key = [c for c in rows.columns if c in _CELL_COLUMNS or c in self.experiment.grid] + ["candidate"]
        if rows.empty or not bool((rows["best_val_acc"] == -math.inf).groupby([rows[c] for c in key]).any().all()):
            return ""  # some value trained on every tuning seed (the mean over seeds is -inf where any seed failed)
        cell = " ".join(str(v) for v in where.values())
        return f"{source}{' ' + cell if cell else ''}: every value tried diverged or collapsed"

    def values(self, label: str, metric: str = "test_acc", **where: Any) -> dict[int, float]:
        """{seed: metric} of arm ``label`` (at the grid point ``where``, e.g. ``batch_size=32``); an
        :class:`~pflnb.experiments.claims.Untuned` mapping when the arm's tuning found no value that trained
        (:meth:`untuned`), which the floor rule treats as an arm that did not train."""
        rows = self.table[self.table["label"] == label]
        for name, value in where.items():
            rows = rows[rows[name] == value]
        if rows.empty:
            raise KeyError(f"{self.experiment.name}: no runs of {label!r} at {where}")
        out = {int(s): float(v) for s, v in zip(rows["seed"], rows[metric])}
        why = self.untuned(label, **where)
        return Untuned(out, why) if why else out

    def collapsed(self, labels: Sequence[str], floor: float, **where: Any) -> list[str]:
        """The verdict runs of the arms ``labels`` (at the grid point ``where``) that collapsed: diverged, or best or
        last validation accuracy below ``floor`` (a fraction; :func:`excluded`), as 'FedPG seed 3 (collapsed (...))'."""
        out = []
        for row, record in zip(self.table.to_dict("records"), self.records):
            if row["label"] not in labels or any(row.get(k) != v for k, v in where.items()) or not isinstance(record, Mapping):
                continue
            summary = record.get("summary")
            if record.get("status") == "diverged" or (isinstance(summary, Mapping) and "best_val_acc" in summary):
                why = excluded(record, floor)
                if why:
                    out.append(f"{row['label']} seed {int(row['seed'])} ({why})")
        return out

    def labelled(self, label: str) -> list[dict[str, Any]]:
        """The records of arm ``label``."""
        return [r for r, lab in zip(self.records, self.table["label"]) if lab == label]
