"""Pictures of what was estimated: every estimate type's ``.plot()`` draws exactly its estimates and
intervals (read back from the matplotlib artists, not "it ran"), a missing matplotlib is a clear
error naming the ``plot`` extra, drawing leaves matplotlib's global state alone, and the ledger's
summaries (``cohort_ranges``, ``spend_groups``, ``ldp budget history|plot``) never list thousands
of cohort ids."""

from __future__ import annotations

import json
import sys
from datetime import datetime

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin import pictures  # noqa: E402
from ldp_plugin.accountant import cohort_ranges, spend_groups  # noqa: E402


def _errorbar_spans(ax) -> list:
    """Every error bar's (low, high) along its direction, from the drawn line segments."""
    spans = []
    for coll in ax.collections:
        if type(coll).__name__ != "LineCollection":
            continue
        for seg in coll.get_segments():
            (x0, y0), (x1, y1) = seg
            spans.append((min(x0, x1), max(x0, x1)) if y0 == y1 else (min(y0, y1), max(y0, y1)))
    return spans


def _bar_widths(ax) -> list:
    return [p.get_width() for p in ax.patches]


def test_frequency_estimate_plot_draws_its_estimates_and_intervals():
    mech = ldp.KRR(epsilon=2.0, categories=["red", "green", "blue"])
    est = mech.estimate(mech.randomize(["red"] * 600 + ["blue"] * 300 + ["green"] * 100, rng=0))
    ax = est.plot(truth=[0.6, 0.1, 0.3])
    order = np.argsort(-est.estimate, kind="stable")
    assert np.allclose(_bar_widths(ax), est.estimate[order])
    by_position = {int(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}
    assert [by_position[y] for y in sorted(by_position, reverse=True)] == [est.items[i] for i in order]  # largest on top
    spans = sorted(_errorbar_spans(ax))
    assert np.allclose(spans, sorted(zip(est.ci_lower, est.ci_upper)))
    assert "n=1,000" in ax.get_title()
    # a power check for the read-back: a plot of other intervals is told apart
    other = pictures.frequencies(est.items, est.estimate, est.ci_lower - 0.05, est.ci_upper)
    assert not np.allclose(sorted(_errorbar_spans(other)), sorted(zip(est.ci_lower, est.ci_upper)))


def test_frequency_plot_keeps_the_largest_items_and_says_so():
    items = [f"app{i}" for i in range(100)]
    est = np.linspace(0.0, 0.02, 100)
    ax = pictures.frequencies(items, est, est - 0.001, est + 0.001, max_items=10)
    assert len(ax.patches) == 10 and np.allclose(sorted(_bar_widths(ax)), est[-10:])
    assert "10 largest of 100" in ax.get_title()


def test_distribution_cdf_quantiles_and_histogram_plots():
    sw = ldp.SquareWave(epsilon=2.0, lower=0, upper=1000, grid=32)
    est = sw.estimate(sw.randomize(np.random.default_rng(0).beta(2, 5, 5000) * 1000, rng=1))
    ax = est.plot()  # the CDF and its band
    [line] = [ln for ln in ax.get_lines() if ln.get_label() == "estimated CDF"]
    x, F = line.get_data()
    assert x[0] == 0 and x[-1] == 1000 and F[0] == 0 and abs(F[-1] - 1) < 1e-9
    assert np.allclose(F[16], est.range_fraction(0, 500).fraction)
    [band] = [c for c in ax.collections if "band" in str(c.get_label())]
    ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    r = est.range_fraction(0, 500)
    assert np.any(np.isclose(ys, max(r.ci_lower, 0))) and np.any(np.isclose(ys, min(r.ci_upper, 1)))
    q = est.plot(kind="quantiles", q=[0.25, 0.5, 0.75])
    rows = est.quantiles([0.25, 0.5, 0.75])
    [pts] = [ln for ln in q.get_lines() if ln.get_marker() == "o"]
    assert np.allclose(pts.get_xdata(), [r["estimate"] for r in rows]) and np.allclose(pts.get_ydata(), [0.25, 0.5, 0.75])
    assert np.allclose(sorted(_errorbar_spans(q)), sorted((r["ci_lower"], r["ci_upper"]) for r in rows))
    h = est.plot(kind="histogram", buckets=8)
    assert np.allclose(_bar_widths(h), 125.0) and np.allclose([p.get_height() for p in h.patches], est.histogram(8)["estimate"])
    with pytest.raises(ldp.LDPParameterError, match="kind"):
        est.plot(kind="pie")


def test_tree_estimates_plot_their_cdf_band_and_ranges():
    hh = ldp.HierarchicalHistogram(epsilon=1.0, lower=0, upper=1000, buckets=64)
    est = hh.estimate(hh.randomize(np.random.default_rng(2).uniform(0, 1000, 5000), rng=2))
    ax = est.plot()
    x, F, se = est.cdf_bands()
    [line] = [ln for ln in ax.get_lines() if ln.get_label() == "estimated CDF"]
    assert np.allclose(line.get_xdata(), x) and np.allclose(line.get_ydata(), F)
    r1, r2 = est.range_fraction(0, 250), est.range_fraction(250, 600)
    ax = r1.plot()
    r2.plot(ax=ax)  # several ranges on one Axes
    assert np.allclose([p.get_height() for p in ax.patches], [r1.fraction, r2.fraction])
    assert np.allclose([p.get_width() for p in ax.patches], [250, 350])
    assert np.allclose(sorted(_errorbar_spans(ax)), sorted([(r1.ci_lower, r1.ci_upper), (r2.ci_lower, r2.ci_upper)]))


def test_mean_marginals_and_key_value_plots():
    m = ldp.Piecewise(epsilon=1.0, lower=0, upper=10)
    me = m.estimate(m.randomize(np.random.default_rng(3).uniform(0, 10, 4000), rng=3))
    ax = me.plot(lower=0, upper=10, truth=5.0)
    assert _errorbar_spans(ax) == [pytest.approx((me.ci_lower, me.ci_upper))] and ax.get_xlim() == (0, 10)

    rng = np.random.default_rng(0)
    rsfd = ldp.RSFD(epsilon=2.0, domains=(3, 2))
    ma = rsfd.estimate(rsfd.randomize(np.column_stack([rng.integers(0, 3, 3000), rng.integers(0, 2, 3000)]), rng=1))
    fig = ma.plot(names=["country", "os"])
    panels = [a for a in fig.axes if a.patches]
    assert [a.get_title().split(" (")[0] for a in panels] == ["country", "os"]
    for a, e in zip(panels, ma.attributes):
        assert np.allclose(sorted(_bar_widths(a)), sorted(e.estimate))
    with pytest.raises(ldp.LDPParameterError, match="one name per attribute"):
        ma.plot(names=["only one"])

    pckv = ldp.PCKV(epsilon=2.0, d=3, ell=2)
    kv = pckv.estimate(pckv.randomize([[(0, 0.5), (2, -0.2)], [(1, 0.9)], []] * 300, rng=5))
    fig = kv.plot(keys=["maps", "mail", "chat"])
    ax_f, ax_m = fig.axes
    assert np.allclose(_bar_widths(ax_f), kv.frequency)
    assert np.allclose(sorted(_errorbar_spans(ax_m)), sorted(zip(kv.mean_ci_lower, kv.mean_ci_upper)))
    assert [t.get_text() for t in ax_f.get_yticklabels()] == ["maps", "mail", "chat"]


def test_drawing_leaves_matplotlib_global_state_alone():
    before = (matplotlib.get_backend(), dict(matplotlib.rcParams))
    mech = ldp.OUE(epsilon=1.0, categories=["a", "b"])
    mech.estimate(mech.randomize(["a", "b"] * 200, rng=0)).plot()
    assert (matplotlib.get_backend(), dict(matplotlib.rcParams)) == before
    assert "matplotlib.pyplot" not in sys.modules or sys.modules["matplotlib.pyplot"].get_fignums() == []


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an environment without matplotlib imports
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    mech = ldp.KRR(epsilon=1.0, categories=["a", "b"])
    est = mech.estimate(mech.randomize(["a"] * 50, rng=0))
    with pytest.raises(pictures.MissingPlotExtra, match=r"plot' extra") as err:
        est.plot()
    assert isinstance(err.value, ImportError) and isinstance(err.value, ldp.LDPParameterError)


def test_cohort_ranges():
    assert cohort_ranges(range(2000), 2000) == "all 2,000"
    assert cohort_ranges([], 8) == "none"
    assert cohort_ranges([0, 1, 2, 3, 7, 9, 10], 16) == "0-3,7,9-10"
    text = cohort_ranges(range(0, 2000, 2), 2000)
    assert text.endswith("+994 more ranges, 1,000 cohorts") and len(text) < 80


def _ledger(tmp_path, cohorts=2000):
    acc = ldp.Accountant.create(str(tmp_path / "big.ledger"), ldp.Population(name="app-users", lifetime_cap="6", cohorts=cohorts))
    acc.spend("q1", 1, cohorts=range(cohorts))
    acc.spend("q2", 0.5, cohorts=range(0, 1000))
    acc.spend("q3", 1.5, cohorts=range(500, 1500))
    acc.spend("q4", 1, cohorts=[3, 7, 1999])
    return acc


def test_spend_groups_follow_the_ledger_exactly(tmp_path):
    acc = _ledger(tmp_path)
    groups = spend_groups(acc.history(), 2000)
    by_label = {g["label"]: g for g in groups}
    assert by_label["cohorts 500-999"]["cumulative"] == [1.0, 1.5, 3.0]
    assert by_label["cohorts 3,7"]["cumulative"] == [1.0, 1.5, 2.5]
    assert by_label["cohorts 1500-1998"]["cumulative"] == [1.0]
    assert sorted(c for g in groups for c in g["cohorts"]) == list(range(2000))  # every cohort in exactly one group
    for c in (3, 600, 1200, 1999):  # each group's final total is each of its cohorts' spend in the ledger
        [g] = [g for g in groups if c in g["cohorts"]]
        assert g["cumulative"][-1] == float(acc.spent([c]))
    assert all(isinstance(t, datetime) for g in groups for t in g["times"])
    # more groups than drawn: the rest become one envelope line that is never below any of them
    few = spend_groups(acc.history(), 2000, max_groups=3)
    assert len(few) == 3 and few[-1]["label"].startswith("other cohorts (4 groups")
    assert few[-1]["cumulative"][-1] == max(float(acc.spent([c])) for c in few[-1]["cohorts"])
    acc.close()


def test_budget_history_and_plot_summarise_cohorts(tmp_path, cli):
    _ledger(tmp_path).close()
    led = str(tmp_path / "big.ledger")
    out = cli("budget", "history", led)
    assert out.returncode == 0 and "cohorts=all 2,000" in out.stdout and "cohorts=500-1499" in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) < 200  # never 2,000 ids on a row
    doc = json.loads(cli("budget", "history", led, "--json").stdout)
    assert doc["history"][0]["cohort_summary"] == "all 2,000" and doc["history"][0]["cohort_count"] == 2000
    png = tmp_path / "spend.png"
    out = cli("budget", "plot", led, "--out", str(png), "--json")
    assert out.returncode == 0, out.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(out.stdout)
    assert {g["cohorts"]: g["spent"] for g in doc["populations"][0]["cohort_groups"]}["cohorts 500-999"] == 3.0
    bad = cli("budget", "plot", led, "--out", str(tmp_path / "spend.txt"))
    assert bad.returncode == 2 and "--out" in bad.stderr

