"""Deciding a paper's declared claims on its results (:func:`decide`): the floor while each rule runs, the stand-in
reasons from what the claim read, confounds and collapsed seeds in the verdict, fragility from the robustness table,
and the coverage table of the paper's numbered items (:func:`coverage_table`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb.experiments import claims as R
from pflnb.experiments.claims import Claim, Outcome
from pflnb.experiments.claimspec import Best, ClaimSpec, Compare, Derived, Paper, View, _result
from pflnb.experiments.declarations import experiment_chance, setting_stand_in
from pflnb.experiments.result import ExperimentResult

EXTENDED_RUN = "extended experiment: make reproduce-all, or the notebook with extended=True"


class _Skipped(Exception):
    """A rule read a result the main scope skips (:attr:`Paper.extended`)."""


class _Reads(Mapping[str, Any]):
    """``results`` as a rule sees them, remembering the names it read (a :class:`Derived` rule names no experiment);
    reading one of the ``skipped`` names that ``results`` lacks raises :class:`_Skipped`."""

    def __init__(self, results: Mapping[str, Any], skipped: Sequence[str] = ()) -> None:
        self._results, self._skipped, self.read = results, frozenset(skipped), []

    def __contains__(self, name: object) -> bool:
        return name in self._results or name in self._skipped

    def __getitem__(self, name: str) -> Any:
        if name not in self._results and name in self._skipped:
            raise _Skipped(name)
        value = self._results[name]
        if name not in self.read:
            self.read.append(name)
        return value

    def __iter__(self) -> Any:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)


class _Unfilled(dict):
    def __missing__(self, key: str) -> str:
        return "…"


PARAMETERS = ("profile",)  # names in a notebook's results that are parameters, not results


def _floor(paper: Paper, spec: ClaimSpec, results: Mapping[str, Any]) -> R.Floor | None:
    """The floor of a claim: chance of the experiment it reads (a :class:`Derived` claim: the lowest chance among
    the experiments in ``results``, the most lenient) plus :data:`~pflnb.experiments.claims.FLOOR_MARGIN`; None when
    the paper claims the failure or no experiment is in ``results``."""
    if spec.failure_is_claim:
        return None
    if isinstance(spec, Compare | Best) and isinstance(results.get(spec.experiment), ExperimentResult):
        res = results[spec.experiment]
        return R.Floor(experiment_chance(res.experiment, res.profile))
    chances = [experiment_chance(r.experiment, r.profile) for r in results.values() if isinstance(r, ExperimentResult)]
    return R.Floor(min(chances)) if chances else None


def _stand_in(paper: Paper, spec: ClaimSpec, read: Sequence[str], results: Mapping[str, Any]) -> str:
    """Every reason a claim is a stand-in: its declared criterion (``spec.stand_in``) and the setting of each result it
    read (:func:`setting_stand_in`; :attr:`Paper.side` for results that are not engine experiments)."""
    reasons = [spec.stand_in] if spec.stand_in else []
    names = [spec.experiment, *read] if isinstance(spec, Compare | Best) else list(read)
    for name in dict.fromkeys(names):
        value = results.get(name)
        if isinstance(value, ExperimentResult):
            reasons.append(setting_stand_in(value.experiment, value.profile))
        elif name in paper.side:
            side = paper.side[name]
            profile = _profile_of(results)
            if isinstance(side, View):
                reasons.append(setting_stand_in(paper.experiment(side.experiment), profile) if profile else "")
            elif isinstance(side, Mapping):  # the reason at each profile
                if profile not in side:
                    raise ValueError(
                        f"{paper.name}: the side result {name!r} declares its stand-in at {sorted(side)}, not at "
                        f"profile {profile!r} (pass the results' profile, or declare it there)"
                    )
                reasons.append(side[profile])
            else:
                reasons.append(side)
        elif name not in PARAMETERS:
            raise ValueError(
                f"{paper.name}: the claim {spec.claim!r} reads {name!r}, which is neither an experiment nor declared in the "
                "paper's side results (Paper.side: '' for the paper's own setting, else why it is a stand-in)"
            )
    return "; ".join(dict.fromkeys(r for r in reasons if r))


def _profile_of(results: Mapping[str, Any]) -> str | None:
    """The profile the results were computed at: their ``profile`` parameter, else any experiment's."""
    if isinstance(results.get("profile"), str):
        return results["profile"]
    return next((r.profile for r in results.values() if isinstance(r, ExperimentResult)), None)


def robustness_path(root: str | Path | None = None) -> Path:
    """The committed table of ``make robustness``: each claim's verdict under the pinned and the perturbed kernels."""
    return (Path(root) if root is not None else R.figures_root()) / "robustness.csv"


def fragility(paper: str, root: str | Path | None = None) -> dict[str, tuple[str, str, str]]:
    """Claim text → ('fragile' (its verdict changed under the perturbed kernels) or 'stable', the pinned verdict
    category, the pinned numbers) for ``paper``, from the committed robustness table; empty without one. The mark
    applies while the claim is decided as it was then (:func:`~pflnb.experiments.claims.checks_now`)."""
    path = robustness_path(root)
    if not path.exists():
        return {}
    t = pd.read_csv(path, keep_default_na=False, dtype=str)
    t = t[t["paper"] == paper]
    rows = zip(t["claim"], t["fragile"], t["pinned"], t["pinned verdict"])
    return {c: (f, v, ours) for c, f, v, ours in rows if f in (R.FRAGILE, "stable")}


def decide(paper: Paper, results: Mapping[str, Any], extended: bool = True, only: Sequence[str] | None = None) -> list[Claim]:
    """The paper's declared claims decided on ``results`` (experiment name → :class:`ExperimentResult`, plus any
    named values a :class:`Derived` claim reads), in declaration order.

    Each claim gets: the tuning in its note (:meth:`ExperimentResult.tuning_note`: the compared arms of a
    :class:`Compare` or :class:`Best`, every tuned arm of each experiment a :class:`Derived` rule read); the floor for
    arms that did not train while its rule runs (:func:`_floor`: an arm below it makes the claim, or its part, not
    testable); its stand-in reasons derived from what it read (:func:`_stand_in`); who states it (``cite`` or
    ``ours``); the paper's effect beside ours and where it lies against our interval; and whether its verdict proved
    fragile under perturbed kernels (:func:`fragility`; not checked where the robustness table saw another decision).

    ``extended=False`` (the main scope): a claim that reads one of :attr:`Paper.extended`'s results, absent from
    ``results``, is **not run** (its text's placeholders shown as '…'). Any other missing result is an error, also
    an extended one when ``extended`` is True. ``only``: decide just the claims whose text starts with one of these
    (e.g. the claims run at the paper's own setting, whose results hold some experiments only); an unknown one is an
    error."""
    out = []
    fragile = fragility(paper.name)
    specs = paper.claims
    if isinstance(only, str):
        raise TypeError(f"only must be a sequence of claim texts, not the string {only!r}")
    if only is not None:
        unknown = [o for o in only if not any(spec.claim.startswith(o) for spec in paper.claims)]
        if unknown:
            raise ValueError(f"{paper.name} declares no claim starting with {unknown}")
        specs = tuple(spec for spec in paper.claims if spec.claim.startswith(tuple(only)))
    for spec in specs:
        reads = _Reads(results, () if extended else paper.extended)
        stated = dict(source=spec.source, cite=spec.cited(), wall_clock=spec.wall_clock)
        try:
            with R.floor(_floor(paper, spec, results)):
                decided = spec.decide(reads) if isinstance(spec, Derived) else spec.outcome(reads)
        except _Skipped:
            text, note = spec.claim.format_map(_Unfilled()), spec.note.format_map(_Unfilled())
            out.append(Claim(text, spec.paper, R.not_run(EXTENDED_RUN), note=note, stand_in=spec.stand_in, **stated))
            continue
        outcome, seeds = decided[:2]
        fill = decided[2] if len(decided) > 2 else {}
        text, note = (spec.claim.format(**fill), spec.note.format(**fill)) if fill else (spec.claim, spec.note)
        if isinstance(spec, Compare | Best):
            arms = (spec.arm, spec.other) if isinstance(spec, Compare) else (spec.arm, *spec.others)
            tuned = [_result(results, spec.experiment).tuning_note(arms)]
        else:
            tuned = [
                r.tuning_note(list(dict.fromkeys([*r.tuning["label"], *(r.experiment.tune.shared if r.experiment.tune else ())])))
                for r in (results[name] for name in reads.read)
                if isinstance(r, ExperimentResult) and r.tuning is not None and not r.tuning.empty
            ]
        note = "; ".join(n for n in (note, *tuned) if n)
        outcome = R.confounded(_with_collapsed(paper, spec, results, outcome), spec.confound)
        effect, where = R.effect_text(spec.effect, outcome)
        mark, pinned, pinned_ours = fragile.get(text, ("", "", ""))
        checked = mark and R.checks_now(pinned, pinned_ours, outcome.verdict, outcome.ours, spec.wall_clock)
        out.append(
            Claim(
                text,
                spec.paper,
                outcome,
                note=note,
                seeds=seeds,
                stand_in=_stand_in(paper, spec, reads.read, results),
                paper_effect=effect,
                effect_vs_ours=where,
                fragile=mark if checked else "",
                reads=[name for name in reads.read if isinstance(results[name], ExperimentResult)],
                **stated,
            )
        )
    return out


def _with_collapsed(paper: Paper, spec: ClaimSpec, results: Mapping[str, Any], outcome: Outcome) -> Outcome:
    """``outcome`` with its compared arms' collapsed verdict runs named in ``ours`` (a :class:`Compare` or
    :class:`Best` claim: the runs stay in the interval, but a seed that fell to chance is reported as such, never
    averaged in silently); unchanged when none collapsed, for other claims, or where no floor applies."""
    rule = _floor(paper, spec, results)
    if rule is None or not isinstance(spec, Compare | Best) or not isinstance(results.get(spec.experiment), ExperimentResult):
        return outcome
    arms = (spec.arm, spec.other) if isinstance(spec, Compare) else (spec.arm, *spec.others)
    gone = results[spec.experiment].collapsed(arms, rule.points / 100, **spec.where)
    if not gone:
        return outcome
    return dataclasses.replace(outcome, ours=f"{outcome.ours}; collapsed verdict seed(s): {'; '.join(gone)}")


def coverage_table(paper: Paper, claims: Sequence[Claim]) -> pd.DataFrame:
    """One row per item of ``paper.coverage``: the item, what it shows, its status, and the verdicts of the decided
    ``claims`` that test it (or the reason it is not tested)."""
    rows = []
    for item in paper.coverage:
        verdicts = []
        for text in item.claims:
            claim = next((c for c in claims if c.claim.startswith(text)), None)
            verdicts.append(f"{text}: {claim.label}" if claim is not None else f"{text}: (not decided)")
        rows.append(
            {
                "item": item.item,
                "shows": item.shows,
                "status": item.status,
                "ledger": " ‖ ".join(verdicts) if verdicts else "—",
                "reason": item.reason,
            }
        )
    return pd.DataFrame(rows, columns=["item", "shows", "status", "ledger", "reason"])


def write_coverage(paper: Paper, claims: Sequence[Claim], path: str | Path) -> pd.DataFrame:
    """:func:`coverage_table` written to ``path`` (CSV) and returned."""
    table = coverage_table(paper, claims)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return table
