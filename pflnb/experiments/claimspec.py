"""A paper's claims and coverage, declared as data: :class:`Compare` (arm A beats arm B), :class:`Best` (arm A
beats the strongest of its competitors), :class:`Derived` (a paper-specific rule over named results), each with who
states it (:class:`Cite`); :class:`Item`, one numbered item of the paper and the claims that test it; and the
:class:`Paper` that holds experiments, claims and coverage. :func:`~pflnb.experiments.deciding.decide` decides them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pflnb.experiments import claims as R
from pflnb.experiments.claims import Outcome
from pflnb.experiments.declarations import Experiment
from pflnb.experiments.result import ExperimentResult


@dataclass(frozen=True)
class Cite:
    """Where a paper states a claim (section, table or figure) and a short quote of its text; a test finds the quote
    in the paper's text (whitespace normalised)."""

    where: str
    quote: str

    def __post_init__(self) -> None:
        if not self.where.strip() or len(self.quote.split()) < 3:
            raise ValueError(f"a citation needs where the paper says it and a quote of a few words, got {self!r}")

    def text(self) -> str:
        """'§5.2, Table 2: “quote”'."""
        return f"{self.where}: “{self.quote}”"


@dataclass(frozen=True)
class _Stated:
    """What every claim declares besides its rule: who states it and with which effect.

    - ``cite``: where the paper states it (:class:`Cite`); a claim without one is **our check** and says why in
      ``ours`` (a sanity check, a spec-only expectation, an implied reading): listed apart, never counted.
    - ``effect``: the paper's own effect, A − B in the units of our interval (points for accuracies), where the
      paper states numbers for both sides; per named part for a claim in parts. Shown beside ours, with where it
      lies against our interval.
    - ``wall_clock``: decided from wall-clock times (``check-outputs`` lists its changes like a timing file's).
    - ``failure_is_claim``: the paper claims that an arm fails, so the floor for arms that did not train is off.
    - ``by_construction``: why the statement holds by construction of our code or is a textbook property (an identity
      of linear algebra, a property of any such kernel or step): no evidence for the paper, so the row is **our
      check** whatever the paper states (its citation kept beside the reason), never a reproduced paper claim.
    - ``confound``: what else differs between the compared arms besides what the claim is about (a step budget, a
      learning rate, an artifact of the evaluation): the numbers cannot decide the claim, so a verdict that would be
      reproduced, partial or contradicted is **inconclusive (confounded: …)** (:data:`~pflnb.experiments.claims.CONFOUNDED`).
    """

    cite: Cite | None = field(default=None, kw_only=True)
    ours: str = field(default="", kw_only=True)
    effect: float | Mapping[str, float] | None = field(default=None, kw_only=True)
    wall_clock: bool = field(default=False, kw_only=True)
    failure_is_claim: bool = field(default=False, kw_only=True)
    by_construction: str = field(default="", kw_only=True)
    confound: str = field(default="", kw_only=True)

    @property
    def source(self) -> str:
        """``paper`` for a cited claim, ``ours`` for our own check (uncited, or holding by construction)."""
        return R.OURS_SOURCE if self.cite is None or self.by_construction else R.PAPER_SOURCE

    def cited(self) -> str:
        """The CSV's ``cite`` cell: the citation, or why the check is ours."""
        if self.by_construction:
            stated = f"; the paper: {self.cite.text()}" if self.cite is not None else ""
            return f"holds by construction or is a textbook property: {self.by_construction}{stated}"
        return self.cite.text() if self.cite is not None else self.ours


@dataclass(frozen=True)
class Compare(_Stated):
    """'``arm`` beats ``other`` (by ``margin``)' on ``metric`` of ``experiment``: :func:`~pflnb.experiments.claims.compare`
    on per-seed paired differences (``higher=False``: ``arm`` is claimed lower; ``names``: how the two are called in
    the result, default their labels; ``untestable``: profile → why the claim is not testable there)."""

    claim: str
    paper: str
    experiment: str
    arm: str
    other: str
    metric: str = "test_acc"
    margin: float = 0.0
    higher: bool = True
    where: Mapping[str, Any] = field(default_factory=dict)
    names: tuple[str, str] | None = None
    note: str = ""
    stand_in: str = ""
    untestable: Mapping[str, str] = field(default_factory=dict)

    def outcome(self, results: Mapping[str, ExperimentResult]) -> tuple[Outcome, list[int] | None]:
        res = _result(results, self.experiment)
        if res.profile in self.untestable:
            return R.not_testable(self.untestable[res.profile]), None
        a, b = res.values(self.arm, self.metric, **self.where), res.values(self.other, self.metric, **self.where)
        out = R.compare(a, b, margin=self.margin, higher=self.higher, names=self.names or (self.arm, self.other))
        return out, sorted(set(a) & set(b))


# The validation counterpart of a test metric: what :class:`Best` chooses the strongest competitor on
VALIDATION = {"test_acc": "best_val_acc"}


@dataclass(frozen=True)
class Best(_Stated):
    """'``arm`` is the best of ``others``' on ``metric``: :func:`~pflnb.experiments.claims.best`, ``arm`` against the
    competitor strongest on the metric's validation counterpart (:data:`VALIDATION`; a metric without one: against
    every competitor); ``untestable``: profile → why the claim is not testable there."""

    claim: str
    paper: str
    experiment: str
    arm: str
    others: tuple[str, ...]
    metric: str = "test_acc"
    higher: bool = True
    margin: float = 0.0  # the paper's claimed lead (points): reproduced only above it, 'smaller than claimed' below
    where: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    stand_in: str = ""
    untestable: Mapping[str, str] = field(default_factory=dict)

    def outcome(self, results: Mapping[str, ExperimentResult]) -> tuple[Outcome, list[int] | None]:
        res = _result(results, self.experiment)
        if res.profile in self.untestable:
            return R.not_testable(self.untestable[res.profile]), None
        a = res.values(self.arm, self.metric, **self.where)
        others = {o: res.values(o, self.metric, **self.where) for o in self.others}
        val = VALIDATION.get(self.metric)
        select = {o: res.values(o, val, **self.where) for o in self.others} if val else None
        out = R.best(a, others, select=select, name=self.arm, higher=self.higher, margin=self.margin)
        return out, sorted(a)


@dataclass(frozen=True)
class Derived(_Stated):
    """A claim decided from a paper's own view of the results: ``decide(results)`` returns the outcome of one of the
    rules of :mod:`pflnb.experiments.claims` and the seeds behind it, and optionally a mapping of values that fill the
    ``{placeholders}`` of the claim's text and note (a setting known only from the results, e.g. the largest N)."""

    claim: str
    paper: str
    decide: Callable[[Mapping[str, Any]], tuple[Any, ...]]
    note: str = ""
    stand_in: str = ""

    def outcome(self, results: Mapping[str, Any]) -> tuple[Outcome, Sequence[int] | None]:
        return self.decide(results)[:2]


ClaimSpec = Compare | Best | Derived


@dataclass(frozen=True)
class View:
    """A side result computed from the runs of one ``experiment`` (a table of their λ, their loss curves, ...): in
    :attr:`Paper.side` it is a stand-in wherever that experiment is, at the profile the results were computed at."""

    experiment: str


def _result(results: Mapping[str, Any], name: str) -> ExperimentResult:
    if name not in results:
        raise KeyError(f"no results of experiment {name!r}; run it first (run_experiment); have {sorted(results)}")
    return results[name]


@dataclass(frozen=True)
class Item:
    """One numbered item of the paper (a table, a figure, a theorem) and where the ledger tests it: ``claims``, the
    texts (or their beginnings) of the claims that test it, or ``reason`` why it is not tested here. ``status``:
    ``covered``, ``partly`` (``reason`` says what is missing), ``missing`` (testable at this scale but not run yet;
    ``reason`` says what it needs) or ``not testable`` (``reason`` says why)."""

    item: str
    shows: str
    claims: tuple[str, ...] = ()
    status: str = "covered"
    reason: str = ""

    def __post_init__(self) -> None:
        if self.status not in COVERAGE_STATUSES:
            raise ValueError(f"{self.item}: status must be one of {COVERAGE_STATUSES}, got {self.status!r}")
        if self.status in ("covered", "partly") and not self.claims:
            raise ValueError(f"{self.item}: a {self.status} item names the claims that test it")
        if self.status != "covered" and not self.reason and not (self.status == "not testable" and self.claims):
            raise ValueError(f"{self.item}: a {self.status} item says why (reason, or a not-testable ledger row)")


COVERAGE_STATUSES = ("covered", "partly", "missing", "not testable")


@dataclass(frozen=True)
class Paper:
    """A paper: its ``name`` (the package folder), ``title``, experiments and claims, declared as data, and its
    ``coverage``: every numbered item of the paper and the ledger rows that test it (:func:`coverage_table`).
    ``extended``: the names of the results (experiments, or values the notebook derives from them) that only the
    full reproduction computes: the sweeps and analogues added for coverage, which the main scope (``make
    reproduce``, the notebooks' ``extended=False``) skips to keep its cost down; :func:`decide` reports their claims
    as not run there. ``side``: every result a claim reads that is not an engine experiment (a theory check, a
    simulation, a table the notebook derives) → '' when it runs in the paper's own setting, else why it is a
    stand-in (another dataset, model or scale), a mapping of profile → that reason where the result's sizes follow
    the profile (a simulation run at the paper's sizes at the paper profile), or a :class:`View` of the experiment it
    is computed from; :func:`decide` refuses a claim that reads an undeclared one, so no claim's stand-in flag can be
    forgotten."""

    name: str
    title: str
    experiments: tuple[Experiment, ...]
    claims: tuple[ClaimSpec, ...] = ()
    coverage: tuple[Item, ...] = ()
    extended: tuple[str, ...] = ()
    side: Mapping[str, str | View | Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [e.name for e in self.experiments]
        if len(set(names)) != len(names):
            raise ValueError(f"paper {self.name!r} declares experiments with the same name: {names}")
        if len(set(self.extended)) != len(self.extended):
            raise ValueError(f"paper {self.name!r} names an extended result twice: {list(self.extended)}")
        for spec in self.claims:
            if isinstance(spec, Compare | Best):
                arms = (spec.arm, spec.other) if isinstance(spec, Compare) else (spec.arm, *spec.others)
                experiment = self.experiment(spec.experiment)
                for label in arms:
                    experiment.arm(label)  # a claim names arms that exist
        texts = [spec.claim for spec in self.claims]
        for item in self.coverage:
            unknown = [c for c in item.claims if not any(t.startswith(c) for t in texts)]
            if unknown:
                raise ValueError(f"coverage of {item.item} names claims that {self.name} does not declare: {unknown}")

    def experiment(self, name: str) -> Experiment:
        """The experiment called ``name``."""
        for e in self.experiments:
            if e.name == name:
                return e
        raise KeyError(f"paper {self.name!r} has no experiment {name!r}; it has {[e.name for e in self.experiments]}")


# Where a claim that a main-scope reproduction skipped runs (the shown verdict: 'not run (...)')
