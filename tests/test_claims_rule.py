"""The one verdict rule (pflnb.experiments.claims): intervals, comparative, value, identity, parts, ledger."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pflnb.experiments import claims as C

T95_2 = 2.919986  # Student t quantile 0.95 with 2 degrees of freedom (tables)
T95_4 = 2.131847  # ... with 4 degrees of freedom


def diffs(mean: float, sd: float) -> np.ndarray:
    """Three per-seed differences (in points) with the given mean and sample std."""
    return mean + sd * np.array([-1.0, 0.0, 1.0])


def pair(d_points: np.ndarray, base: float = 0.5) -> tuple[dict[int, float], dict[int, float]]:
    """Per-seed accuracies (fractions) of A and B whose differences are ``d_points`` percentage points."""
    b = {s: base + 0.01 * s for s in range(len(d_points))}
    a = {s: b[s] + d / 100 for s, d in enumerate(d_points)}
    return a, b


def test_t_interval_matches_the_t_table():
    iv = C.t_interval(diffs(0.8, 3.1))
    half = T95_2 * 3.1 / math.sqrt(3)
    assert iv.n == 3 and iv.mean == pytest.approx(0.8)
    assert iv.lo == pytest.approx(0.8 - half, rel=1e-5) and iv.hi == pytest.approx(0.8 + half, rel=1e-5)
    v = np.array([1.0, 2.0, 4.0, 7.0, 11.0])
    iv5 = C.t_interval(v)
    assert iv5.hi - iv5.mean == pytest.approx(T95_4 * v.std(ddof=1) / math.sqrt(5), rel=1e-5)
    one = C.t_interval([3.0])
    assert one.n == 1 and math.isnan(one.lo) and math.isnan(one.hi)


@pytest.mark.parametrize(
    "mean, sd, margin, expected",
    [
        (0.8, 3.1, 0.0, C.INCONCLUSIVE),  # the LG-Mix example
        (5.0, 0.5, 0.0, C.REPRODUCED),
        (-3.0, 0.5, 0.0, C.CONTRADICTED),
        (1.0, 0.2, 3.0, C.CONTRADICTED),  # smaller than claimed
        (4.0, 0.2, 3.0, C.REPRODUCED),
        (2.0, 1.0, 3.0, C.INCONCLUSIVE),  # above 0, but the claimed size δ not shown
    ],
)
def test_comparative_rule(mean, sd, margin, expected):
    a, b = pair(diffs(mean, sd))
    out = C.compare(a, b, margin=margin, names=("A", "B"))
    assert out.verdict == expected
    assert out.interval is not None and out.interval.n == 3
    assert out.interval.mean == pytest.approx(mean)
    if expected == C.INCONCLUSIVE:
        assert out.label == "inconclusive (3 seeds)" and "[" in out.ours  # the interval is always shown
    if margin and expected == C.CONTRADICTED:
        assert "smaller than claimed" in out.label
    if margin and expected == C.INCONCLUSIVE:
        assert out.detail == "above 0, the claimed size δ = 3 not shown"


def test_one_seed_is_inconclusive_whatever_its_size():
    a, b = pair(np.array([40.0]))
    out = C.compare(a, b)
    assert out.verdict == C.INCONCLUSIVE and out.label == "inconclusive (1 seed)"


def test_lower_is_better_claims_flip_the_side():
    a, b = pair(diffs(-5.0, 0.5))  # A is 5 points below B
    assert C.compare(a, b, higher=False).verdict == C.REPRODUCED
    assert C.compare(a, b, higher=True).verdict == C.CONTRADICTED
    a, b = pair(diffs(+5.0, 0.5))
    assert C.compare(a, b, higher=False).verdict == C.CONTRADICTED


def test_pairing_is_by_seed_not_position():
    a = {0: 0.90, 1: 0.50, 2: 0.70}
    b = {2: 0.60, 0: 0.80, 1: 0.40}  # same seeds, another order: every difference is +10 points
    out = C.compare(a, b)
    assert out.interval.mean == pytest.approx(10.0) and out.interval.hi - out.interval.lo == pytest.approx(0, abs=1e-9)
    assert out.verdict == C.REPRODUCED
    with pytest.raises(ValueError, match="same seeds"):
        C.compare({0: 0.5, 1: 0.6}, {0: 0.5, 2: 0.6})
    with pytest.raises(ValueError, match="margin"):
        C.compare(a, b, margin=-1)


def test_decimals_follow_the_unit_not_only_the_scale():
    """Points show 2 decimals (means 1) whether fractions are scaled by 100 or the values are already in points."""
    a, b = {0: 12.34567, 1: 10.0, 2: 11.0}, {0: 2.0, 1: 3.0, 2: 1.0}  # differences 10.34567, 7, 10 (mean 9.11522)
    fractions = C.compare({s: v / 100 for s, v in a.items()}, {s: v / 100 for s, v in b.items()})
    points = C.compare(a, b, scale=1.0, unit="points")
    per_block = C.compare(a, b, scale=1.0, unit="points/block")
    raw = C.compare(a, b, scale=1.0, unit="")
    assert "= +9.12 [" in fractions.ours and "A 11.1 ± 1.2 vs B 2.0 ± 1.0" in fractions.ours
    assert points.ours == fractions.ours
    assert "= +9.12 [" in per_block.ours and per_block.ours.endswith("points/block (90 % CI, 3 seeds)")
    assert "= +9.1152 [" in raw.ours and "A 11.115 ± 1.177" in raw.ours
    assert str(C.value(a, 10.0, 5.0, scale=1.0).interval).startswith("+11.12 [")


def test_a_diverged_run_is_never_a_number():
    out = C.compare({0: 0.5, 1: float("nan")}, {0: 0.4, 1: 0.4})
    assert out.verdict == C.DIVERGED


def test_best_compares_with_the_competitor_strongest_on_validation_never_on_test():
    a, weak = pair(diffs(10.0, 0.5))
    strong = {s: a[s] + 0.002 * (s - 1) for s in a}  # as good as A up to noise on test
    # on validation the weak one looks stronger: the choice follows validation, so A is compared with "weak"
    val = {"weak": {0: 0.9, 1: 0.9, 2: 0.9}, "strong": {0: 0.1, 1: 0.1, 2: 0.1}}
    out = C.best(a, {"weak": weak, "strong": strong}, select=val, name="A")
    assert "vs strongest competitor weak (chosen on validation)" in out.ours and out.verdict == C.REPRODUCED
    val = {"weak": {0: 0.1, 1: 0.1, 2: 0.1}, "strong": {0: 0.9, 1: 0.9, 2: 0.9}}
    out = C.best(a, {"weak": weak, "strong": strong}, select=val, name="A")
    assert "strong (chosen on validation)" in out.ours and out.verdict == C.INCONCLUSIVE
    with pytest.raises(TypeError):
        C.best(a, {"weak": weak}, name="A")  # no default: every caller says what it chooses on
    with pytest.raises(ValueError, match="missing \\['strong'\\]"):
        C.best(a, {"weak": weak, "strong": strong}, select={"weak": weak}, name="A")


def test_best_without_a_validation_counterpart_must_beat_every_competitor():
    a, weak = pair(diffs(10.0, 0.5))
    strong = {s: a[s] + 0.002 * (s - 1) for s in a}
    out = C.best(a, {"weak": weak, "strong": strong}, select=None, name="A")
    assert out.verdict == C.PARTIAL and "against every competitor" in out.ours  # beats weak, not shown against strong
    assert [k for k, _ in out.parts] == ["vs weak", "vs strong"]
    assert C.best(a, {"weak": weak}, select=None, name="A").verdict == C.REPRODUCED
    # no interval to read the paper's effect against unless the paper's own competitor is named: the smallest lead
    # (here strong's) would be chosen on the test values
    assert out.interval is None
    for paired in ("weak", "strong"):
        named = C.best(a, {"weak": weak, "strong": strong}, select=None, name="A", paired=paired)
        assert named.verdict == out.verdict and named.ours == out.ours
        assert named.interval == C.compare(a, {"weak": weak, "strong": strong}[paired]).interval
    assert C.compare(a, weak).interval != C.compare(a, strong).interval
    with pytest.raises(ValueError, match="paper's competitor"):
        C.best(a, {"weak": weak, "strong": strong}, select=None, name="A", paired="absent")
    with pytest.raises(ValueError, match="select=None only"):
        C.best(a, {"weak": weak, "strong": strong}, select={"weak": weak, "strong": strong}, name="A", paired="weak")


def test_value_claims_against_a_tolerance():
    near = {s: v / 100 for s, v in enumerate(80.0 + np.array([-0.2, 0.0, 0.2]))}
    assert C.value(near, 80.0, 2.0).verdict == C.REPRODUCED
    far = {s: v / 100 for s, v in enumerate(70.0 + np.array([-0.2, 0.0, 0.2]))}
    assert C.value(far, 80.0, 2.0).verdict == C.CONTRADICTED
    noisy = {s: v / 100 for s, v in enumerate(80.0 + np.array([-5.0, 0.0, 5.0]))}
    assert C.value(noisy, 80.0, 2.0).verdict == C.INCONCLUSIVE
    assert C.value({0: 0.8}, 80.0, 2.0).verdict == C.INCONCLUSIVE


def test_identities_and_checks():
    assert C.identity(3e-15, 1e-12).verdict == C.REPRODUCED
    assert C.identity(-2e-3, 1e-6).verdict == C.CONTRADICTED
    assert C.identity(float("nan"), 1e-6).verdict == C.DIVERGED
    assert C.check(True, "max g·d = -0.1", criterion="max g·d < 0").verdict == C.REPRODUCED
    assert C.check(False, "max g·d = 0.1", criterion="max g·d < 0").verdict == C.CONTRADICTED
    with pytest.raises(ValueError):
        C.check(True, "x", criterion="")


def test_holm_adjusted_p_values_match_the_step_down_by_hand():
    # sorted 0.01 < 0.02 < 0.04 < 0.3: (4·0.01, 3·0.02, 2·0.04, 1·0.3) = (0.04, 0.06, 0.08, 0.3), made monotone
    assert C.holm([0.04, 0.3, 0.01, 0.02]) == pytest.approx([0.08, 0.3, 0.04, 0.06])
    assert C.holm([0.5, 0.5]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert C.holm([0.2, 0.01]) == pytest.approx([0.2, 0.02])  # monotone: never below an earlier step


def _out(verdict, p=None):
    return C.Outcome(verdict, verdict, p_against=p)


REP, INC, DIV = _out(C.REPRODUCED, 0.9), _out(C.INCONCLUSIVE, 0.3), _out(C.DIVERGED)
NT, NR = C.not_testable("needs 2,000 rounds"), C.not_run("make reproduce-all")
CON = _out(C.CONTRADICTED, 0.001)  # survives Holm over any few parts
WEAK = _out(C.CONTRADICTED, 0.04)  # contradicted alone (0.04 ≤ 0.05), not after Holm over 2+ tested parts


@pytest.mark.parametrize(
    "parts, whole",
    [
        ((NT, NT), C.NOT_TESTABLE),  # every part not testable
        ((NT, NR), C.NOT_RUN),  # ... or not run
        ((REP, CON), C.CONTRADICTED),  # a part contradicted after Holm: whatever else holds
        ((INC, CON, REP), C.CONTRADICTED),
        ((REP, REP), C.REPRODUCED),  # every part reproduced
        ((REP, REP, REP), C.REPRODUCED),
        ((REP, INC), C.PARTIAL),  # some hold, none contradicted
        ((REP, NT), C.PARTIAL),  # a part that cannot be tested does not hold
        ((REP, WEAK), C.PARTIAL),  # a contradiction that does not survive Holm's correction is no contradiction
        ((DIV, INC), C.DIVERGED),  # none holds, none contradicted, one diverged
        ((INC, INC), C.INCONCLUSIVE),
        ((INC, WEAK), C.INCONCLUSIVE),
    ],
)
def test_parts_truth_table(parts, whole):
    out = C.parts(**{f"p{i}": o for i, o in enumerate(parts)})
    assert out.verdict == whole
    assert [k for k, _ in out.parts] == [f"p{i}" for i in range(len(parts))]  # every part stays visible


def test_parts_keep_their_verdicts_and_say_when_holm_demotes_one():
    whole = C.parts(a=REP, b=WEAK)
    shown = dict(whole.parts)
    assert shown["a"].verdict == C.REPRODUCED and shown["b"].verdict == C.INCONCLUSIVE
    assert "b: inconclusive" in whole.ours and "contradicted alone, not after Holm over 2 parts" in shown["b"].detail
    # the part's label says why it is inconclusive, next to its seeds (a plain inconclusive part says only its seeds)
    seeded = C.parts(a=REP, b=replace(WEAK, interval=C.Interval(-1.0, -2.0, -0.1, 5)))
    assert "b: inconclusive (5 seeds; contradicted alone, not after Holm over 2 parts)" in seeded.ours
    assert dict(C.parts(a=REP, b=INC).parts)["b"].label == "inconclusive"
    assert C.parts(a=NT, b=WEAK).verdict == C.CONTRADICTED  # one tested part: no correction, 0.04 ≤ 0.05
    assert C.parts(a=CON, b=INC).label == "contradicted (by part)"
    with pytest.raises(ValueError):
        C.parts(a=REP)


def test_a_real_three_part_claim_is_corrected_for_its_parts():
    # each part's difference has a one-sided p of about 0.03: contradicted alone, not after Holm over 3 parts
    d = np.array([-2.0, -0.8, -1.2])
    alone = C.compare(*pair(d))
    assert alone.verdict == C.CONTRADICTED and 0.0167 < alone.p_against < 0.05
    assert C.parts(a=alone, b=alone).verdict == C.INCONCLUSIVE  # Holm: 2·p > 0.05 for the smallest of two
    assert C.parts(a=alone, b=alone, c=alone).verdict == C.INCONCLUSIVE  # ... and 3·p over three
    mixed = C.parts(a=alone, b=C.compare(*pair(diffs(0.5, 3.0))), c=C.compare(*pair(diffs(0.4, 3.0))))
    assert mixed.verdict == C.INCONCLUSIVE and dict(mixed.parts)["a"].verdict == C.INCONCLUSIVE


def test_p_against_is_the_one_sided_t_test_of_the_contradiction():
    from scipy import stats

    d = np.array([-2.0, -0.5, -1.1, 0.3])
    out = C.compare(*pair(d))
    t = d.mean() / (d.std(ddof=1) / math.sqrt(4))
    assert out.p_against == pytest.approx(stats.t.cdf(t, 3))
    sized = C.compare(*pair(diffs(2.0, 1.0)), margin=3.0)  # against the claimed size: is the effect below 3?
    assert sized.p_against == pytest.approx(stats.t.cdf((2.0 - 3.0) / (1.0 / math.sqrt(3)), 2))
    lower = C.compare(*pair(diffs(2.0, 1.0)), higher=False)  # claimed lower, measured +2: strong evidence against
    assert lower.p_against == pytest.approx(stats.t.cdf(-2.0 / (1.0 / math.sqrt(3)), 2))


@pytest.mark.parametrize(
    "verdicts, k, whole",
    [
        ((REP, REP, INC), 2, C.REPRODUCED),
        ((REP, INC, INC), 2, C.INCONCLUSIVE),
        ((REP, CON, CON), 2, C.CONTRADICTED),  # 2 of 3 contradicted: fewer than 2 can hold
        ((REP, CON, INC), 2, C.INCONCLUSIVE),
        ((REP, NT, NT), 2, C.NOT_TESTABLE),
        # 3 of 5 needed: 2 not testable and 1 contradicted leave 2 that could hold: the testable parts cannot make 3
        ((REP, INC, CON, NT, NT), 3, C.NOT_TESTABLE),
        ((REP, INC, INC, NT, NT), 3, C.INCONCLUSIVE),
    ],
)
def test_in_most_cases(verdicts, k, whole):
    assert C.most(k, **{f"c{i}": o for i, o in enumerate(verdicts)}).verdict == whole


def test_equivalence_by_two_one_sided_tests():
    from scipy import stats

    half = stats.t.ppf(0.95, 2) * 0.5 / math.sqrt(3)  # the 90 % half-width of diffs(·, 0.5)
    inside = C.equivalent(*pair(diffs(0.5, 0.5)), margin=0.5 + half + 0.01)
    assert inside.verdict == C.REPRODUCED and "TOST" in inside.ours
    assert C.equivalent(*pair(diffs(0.5, 0.5)), margin=0.5 + half - 0.01).verdict == C.INCONCLUSIVE
    outside = C.equivalent(*pair(diffs(-4.0, 0.5)), margin=2.0)
    assert outside.verdict == C.CONTRADICTED and outside.detail == "differs by more than ±2"
    assert C.equivalent(*pair(diffs(0.0, 5.0)), margin=2.0).verdict == C.INCONCLUSIVE  # noisy: cannot tell
    with pytest.raises(ValueError, match="equivalence margin"):
        C.equivalent(*pair(diffs(0.0, 1.0)), margin=0)


def test_an_arm_below_the_floor_makes_the_claim_not_testable():
    a, b = pair(diffs(47.7, 0.5), base=0.13)  # B at 13 %, A at 61 %, 10 classes
    with C.floor(C.Floor(chance=0.1)):
        out = C.compare(a, b, names=("FedFac", "FedAvg"))
        assert out.verdict == C.NOT_TESTABLE
        assert out.label == "not testable at this scale (FedAvg did not train (14.0 %, chance 10.0 %))"
        assert C.trained(FedAvg=b).detail == "FedAvg did not train (14.0 %, chance 10.0 %)"
        assert C.trained(FedFac=a) is None
        other_units = C.compare(a, b, scale=1.0, unit="loss")  # not accuracies: no floor
        assert other_units.verdict != C.NOT_TESTABLE
        above = C.compare(*pair(diffs(5.0, 0.5), base=0.16))  # 16 % and 21 %: above 10 + 5
        assert above.verdict == C.REPRODUCED
    assert C.compare(a, b).verdict == C.REPRODUCED  # without a floor (the failure is the paper's claim): decided
    with pytest.raises(ValueError):
        C.Floor(chance=1.5)


def test_where_the_papers_effect_lies_against_our_interval():
    out = C.compare(*pair(diffs(2.0, 0.5)))
    lo, hi = out.interval.lo, out.interval.hi
    assert C.effect_position(out, 2.0) == "inside"
    assert C.effect_position(out, hi + 0.01) == "above" and C.effect_position(out, lo - 0.01) == "below"
    assert C.effect_text(2.58, out) == ("+2.58", "inside")
    whole = C.parts(x=out, y=C.compare(*pair(diffs(-3.0, 0.5))))
    assert C.effect_text({"x": 9.0, "y": -3.0}, whole) == ("x: +9.00; y: -3.00", "x: above; y: inside")
    assert C.effect_text(None, out) == ("", "")
    assert C.effect_position(C.not_testable("no"), 1.0) == ""
    with pytest.raises(ValueError, match="parts \\['z'\\]"):
        C.effect_text({"z": 1.0}, whole)
    # parts named by setting differ between profiles: the ones this profile lacks show '—'
    assert C.effect_text({"x": 9.0, "z": 1.0}, whole) == ("x: +9.00; z: +1.00", "x: above; z: —")
    # a claim with per-part effects decided without parts (not testable at smoke, an arm below the floor): '—'
    assert C.effect_text({"x": 9.0}, C.not_testable("smoke")) == ("x: +9.00", "x: —")


def test_an_inconclusive_claim_in_parts_shows_its_seeds():
    three = C.compare(*pair(diffs(0.5, 3.0)))
    five = C.compare(*pair(np.array([0.5, -2.0, 3.0, 1.0, -1.5])))
    assert three.label == "inconclusive (3 seeds)" and five.label == "inconclusive (5 seeds)"
    assert C.parts(a=three, b=three).label == "inconclusive (3 seeds)"
    assert C.parts(a=three, b=five).label == "inconclusive"  # no one count to show
    assert C.parts(a=three, b=C.Outcome(C.INCONCLUSIVE, "x")).label == "inconclusive (3 seeds)"


def test_ledger_round_trip(tmp_path):
    a, b = pair(diffs(5.0, 0.5))
    C.write_claims(
        [C.Claim("A beats B", "+5", C.compare(a, b), seeds=[0, 1, 2]), C.Claim("x", "y", C.not_testable("no GPU"))],
        tmp_path / "lgmix" / "claims.csv",
    )
    code = "pflnb 0.1.0 @ 0123456789ab"
    C.write_claims([C.Claim("id", "exact", C.identity(0.0, 1e-9))], tmp_path / "fedpg" / "claims.csv", code=code)
    t = C.ledger(tmp_path)
    assert list(t.paper) == ["LG-Mix", "LG-Mix", "FedPG"]
    assert t.loc[0, "seeds"] == "0 1 2"
    counts = C.ledger_counts(t).set_index("paper")
    assert counts.loc["LG-Mix", C.REPRODUCED] == 1 and counts.loc["LG-Mix", C.NOT_TESTABLE] == 1
    assert counts.loc["FedPG", "total"] == 1
    md = C.ledger_markdown(tmp_path)  # `pflnb claims --markdown`: the counts and every claim
    assert "| LG-Mix | A beats B | +5 |" in md
    readme = f"intro\n{C.LEDGER_START}\nold\n{C.LEDGER_END}\nrest\n"
    new = C.readme_with_ledger(readme, tmp_path)
    assert new.startswith("intro\n") and new.endswith("rest\n") and "old" not in new
    section = new.split(C.LEDGER_START)[1].split(C.LEDGER_END)[0]
    # the README gets the count table only (reproduced, partial, contradicted, inconclusive, not testable, diverged)
    assert "| LG-Mix | 1 | 0 | 0 | 0 | 1 | 0 | 2 |" in section and "| FedPG | 1 | 0 | 0 | 0 | 0 | 0 | 1 |" in section
    assert "A beats B" not in section, "the claims themselves belong on the site's ledger page"
    assert f"]({C.SITE_LEDGER})" in section and (Path(__file__).resolve().parents[1] / C.SITE_LEDGER).exists()
    assert "0123456789ab" not in section, "no commit ids in the README: check-outputs compares it across commits"
    assert C.readme_with_ledger(new, tmp_path) == new
    pd.read_csv(tmp_path / "lgmix" / "claims.csv")  # plain CSV


def test_repository_readme_holds_the_current_ledger():
    """The README's results overview is the ledger's count table generated from the committed claims CSVs."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    try:
        expected = C.readme_with_ledger(readme)
    except FileNotFoundError:
        pytest.skip("no claims.csv committed yet")
    assert readme == expected, "README ledger is stale: run `make ledger` (pflnb claims --update-readme)"


def test_a_stand_in_says_so_in_its_label_but_keeps_its_category():
    why = "the paper states a rate bound; we test a toy's loss ratios"
    rep = C.Claim("toy converges", "Thm", C.check(True, "ok", criterion="x"), stand_in=why)
    assert rep.label == "reproduced (stand-in)" and rep.verdict == C.REPRODUCED
    row = rep.row()
    assert row["verdict"] == "reproduced (stand-in)" and row["category"] == C.REPRODUCED and row["stand_in"] == why
    con = C.Claim("c", "p", C.check(False, "no", criterion="x"), stand_in=why)
    assert con.label == "contradicted (criterion fails; stand-in)" and con.verdict == C.CONTRADICTED
    a, b = pair(diffs(0.8, 3.1))
    inc = C.Claim("c", "p", C.compare(a, b), stand_in=why)
    assert inc.label == "inconclusive (3 seeds; stand-in)"
    plain = C.Claim("c", "p", C.check(True, "ok", criterion="x"))
    assert plain.label == "reproduced" and plain.row()["stand_in"] == ""
    with pytest.raises(ValueError, match="stand_in"):
        C.Claim("c", "p", C.identity(0, 1), stand_in=" padded ")


def test_the_stand_in_column_round_trips_and_old_csvs_still_read(tmp_path):
    why = "the paper states X; we test Y, a toy"
    path = tmp_path / "fedco2" / "claims.csv"
    C.write_claims(
        [C.Claim("toy", "Thm", C.identity(0.0, 1e-9), "n", stand_in=why), C.Claim("plain", "exact", C.identity(0.0, 1e-9))],
        path,
        code="pflnb 9.9 @ 0123456789ab",
    )
    raw = pd.read_csv(path, keep_default_na=False, dtype=str)
    assert list(raw.columns) == [*C.COLUMNS, C.KERNELS, C.CODE] and list(raw.columns[-2:]) == ["kernels", "code"]
    assert set(raw[C.KERNELS]) == {C.kernels_version()} and C.read_kernels(path) == C.kernels_version()
    table, code = C.read_claims(path)
    assert list(table.columns) == C.COLUMNS and code == "pflnb 9.9 @ 0123456789ab"
    assert table.stand_in.tolist() == [why, ""] and table.verdict.tolist() == ["reproduced (stand-in)", "reproduced"]
    raw.drop(columns=list(C.OPTIONAL)).to_csv(path, index=False)  # a CSV written before those columns existed
    old, _ = C.read_claims(path)
    assert list(old.columns) == C.COLUMNS and old.stand_in.tolist() == ["", ""] and set(old.source) == {"paper"}


def test_the_ledger_marks_stand_ins(tmp_path, capsys):
    from pflnb import cli

    why = "the paper states a bound for any width; we test one toy network"
    C.write_claims(
        [C.Claim("bound holds", "Thm 1", C.identity(0.0, 1e-9), stand_in=why), C.Claim("exact", "Eq. 5", C.identity(0.0, 1e-9))],
        tmp_path / "lgmix" / "claims.csv",
    )
    C.write_claims([C.Claim("id", "exact", C.identity(0.0, 1e-9))], tmp_path / "fedpg" / "claims.csv")
    t = C.ledger(tmp_path)
    assert t.stand_in.tolist() == [why, "", ""] and t.columns[-1] == C.CODE
    counts = C.ledger_counts(t).set_index("paper")
    assert counts.loc["LG-Mix", C.REPRODUCED] == 2 and counts.loc["LG-Mix", "total"] == 2  # counted as its verdict
    assert counts.loc["LG-Mix", C.STAND_IN] == 1 and counts.loc["FedPG", C.STAND_IN] == 0
    md = C.ledger_markdown(tmp_path)
    assert "| LG-Mix | bound holds | Thm 1 |" in md and "| reproduced (stand-in) |" in md
    assert f"| LG-Mix | bound holds | {why} |" in md
    assert "| FedPG | id |" in md and "| FedPG | id | exact | " in md
    assert cli.main(["claims", "--figures", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"stand-in: {why}" in out and "[reproduced (stand-in)] bound holds" in out and "1 of them stand-ins" in out
    C.write_claims([C.Claim("exact", "Eq. 5", C.identity(0.0, 1e-9))], tmp_path / "lgmix" / "claims.csv")
    assert "Stand-ins" not in C.ledger_markdown(tmp_path)  # no reasons table without stand-ins


def test_a_consistency_check_is_not_testable_whatever_it_shows():
    """A check that cannot decide its claim (a bound outside its theorem's hypotheses, an identity true by
    construction) is not testable with its measurement kept, never reproduced, and must say why."""
    out = C.consistency("0 violations in 210 rounds", "outside the theorem's hypotheses")
    assert out.verdict == C.NOT_TESTABLE and out.ours == "0 violations in 210 rounds"
    assert out.label == "not testable at this scale (outside the theorem's hypotheses)"
    with pytest.raises(ValueError, match="reason"):
        C.consistency("0 violations", "")


def test_an_interval_between_zero_and_the_papers_effect_is_shown_and_counted_apart(tmp_path):
    """Inconclusive, with the paper's effect beyond our whole interval away from zero, on the side the claim states:
    the verdict says 'smaller than the paper's effect' and the ledger counts it apart (within the inconclusive count).
    An effect inside the interval, an interval beyond the effect (ours larger), or a paper effect against the claimed
    direction does not count."""
    a, b = pair(diffs(1.0, 1.0))  # A − B = +1 ± 1 over 3 seeds: the 90 % interval [−0.69, +2.69] holds 0
    up = C.compare(a, b)  # claimed: A above B
    down = C.compare(a, b, higher=False)  # claimed: A below B, the same interval
    assert up.verdict == down.verdict == C.INCONCLUSIVE and up.interval.lo < 0 < up.interval.hi < 5.0

    def claim(outcome, effect, text="A beats B"):
        return C.Claim(text, "", outcome, paper_effect=effect, effect_vs_ours=C.effect_position(outcome, float(effect)))

    big, near = claim(up, "+5.00"), claim(up, "+2.00")
    assert big.smaller_than_paper and big.label == f"inconclusive (3 seeds; {C.SMALLER_THAN_PAPER})"
    assert not near.smaller_than_paper and near.label == "inconclusive (3 seeds)"  # +2 lies inside
    assert claim(down, "-5.00").smaller_than_paper  # claimed below: −5 lies below our interval, which reaches 0
    assert not claim(up, "-5.00").smaller_than_paper  # the paper's effect against the claimed direction: ours larger
    a2, b2 = pair(diffs(-3.0, 3.0))  # [−8.1, +2.1]: reaches below the paper's −1 on the claimed side (ours larger)
    assert not claim(C.compare(a2, b2, higher=False), "-1.00").smaller_than_paper
    parts = C.parts(x=up, y=down)  # per part: x claimed up with +5 above, y claimed down with −5 below
    assert C.smaller_than_paper(parts, "x: +5.00; y: -5.00") and not C.smaller_than_paper(parts, "x: +5.00; y: +1.00")
    assert not claim(C.equivalent(a, b, margin=0.5), "+5.00").smaller_than_paper  # no direction claimed
    C.write_claims([big, near, claim(down, "-5.00"), claim(up, "-5.00")], tmp_path / "lgmix" / "claims.csv")
    counts = C.ledger_counts(C.ledger(tmp_path)).set_index("paper")
    assert counts.loc["LG-Mix", C.INCONCLUSIVE] == 4 and counts.loc["LG-Mix", C.SMALLER_COUNT] == 2


def test_a_named_confound_leaves_a_comparison_inconclusive_with_the_reason():
    a, b = pair(diffs(5.0, 0.5))  # +5 ± 0.5: reproduced on its own numbers
    clean = C.compare(a, b)
    assert clean.verdict == C.REPRODUCED
    held = C.confounded(clean, "unequal step budgets")
    assert held.verdict == C.INCONCLUSIVE and held.interval == clean.interval and held.ours == clean.ours
    assert held.label == "inconclusive (3 seeds; confounded: unequal step budgets (would be reproduced))"
    assert C.confounded(clean, "") == clean  # no confound: the verdict stands
    flipped = C.compare(b, a)
    assert C.confounded(flipped, "x").verdict == C.INCONCLUSIVE  # a contradiction cannot stand either
    assert C.confounded(C.not_testable("no GPU"), "x").verdict == C.NOT_TESTABLE  # nothing decided: unchanged


def test_claims_at_the_papers_own_setting_are_listed_under_the_readme_counts(tmp_path):
    a, b = pair(diffs(5.0, 0.5))
    C.write_claims([C.Claim("A beats B", "+5", C.compare(a, b), seeds=[0, 1, 2])], tmp_path / "fedpg" / "claims.csv")
    assert C.paper_setting_text(C.paper_setting_claims(tmp_path)) == ""  # none decided at the paper's setting yet
    C.write_claims([C.Claim("One", ".9", C.value({0: 0.89, 1: 0.9}, 89.5, 1.0))], tmp_path / "lgmix" / C.PAPER_SETTING_FILE)
    assert "(1 claim, `figures" in C.paper_setting_text(C.paper_setting_claims(tmp_path))
    own = C.Claim("Absolute numbers (G-acc .895)", ".895", C.value({0: 0.89, 1: 0.895, 2: 0.9}, 89.5, 1.0))
    gap = C.Claim("G-acc ≈ GM", "±2", C.value({0: 0.5, 1: 0.6, 2: 0.7}, 89.5, 1.0))
    C.write_claims([own, gap], tmp_path / "fedpg" / C.PAPER_SETTING_FILE)
    C.write_claims([own], tmp_path / "lgmix" / C.PAPER_SETTING_FILE)
    text = C.readme_ledger_markdown(tmp_path)
    assert text.endswith(
        "At the paper's own setting or sizes (3 claims, `figures/<paper>/claims-paper.csv`, each on the [claims ledger]"
        "(docs/ledger.md)): LG-Mix 1 reproduced; FedPG 1 reproduced, 1 contradicted."
    )
    stand_in = C.Claim("G-acc ≈ GM", "±2", C.value({0: 0.5, 1: 0.6, 2: 0.7}, 89.5, 1.0), stand_in="fewer clients")
    ours = C.Claim("L-acc below", "", C.value({0: 0.5, 1: 0.6, 2: 0.7}, 89.5, 1.0), source=C.OURS_SOURCE, cite="ours")
    C.write_claims([own, stand_in, stand_in, ours], tmp_path / "fedpg" / C.PAPER_SETTING_FILE)  # our check not counted
    assert C.readme_ledger_markdown(tmp_path).endswith("LG-Mix 1 reproduced; FedPG 1 reproduced, 2 contradicted (2 stand-ins).")
    assert "| FedPG | 1 |" in text  # the cpu profile's counts stay the claims.csv's alone
