"""A discovery's charge is what its reports realize, and it goes through the one release path:
charged once, a retried query id refused (never a fresh release for free), a bad seed refused
before the spend."""

from __future__ import annotations

import warnings
from fractions import Fraction

import polars as pl
import pytest

import ldp_plugin.adapters  # noqa: F401  (registers the ldp namespace)
from ldp_plugin._errors import LDPArgumentError, LDPInputError, LDPParameterError
from ldp_plugin.accountant import Accountant, Population
from ldp_plugin.discovery.query import build_query
from ldp_plugin.mechanisms.charge import report_charge

WORDS = pl.DataFrame({"w": ["abba"] * 30 + ["ab"] * 20 + ["ba"] * 10})


def _sfp(eps: float, share: float):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # SFP is demoted (it says so)
        return build_query("sfp", epsilon=eps, top_k=3, alphabet="ab", max_length=4, word_share=share)


def test_sfp_charges_both_reports_exact_sum():
    # ε·0.3 and ε − ε·0.3 are floats whose exact values add up to one ulp more than ε here
    q = _sfp(6.623, 0.3)
    realized = report_charge(q.word_mechanism) + max(report_charge(m) for m in q.fragment_mechanisms)
    assert realized > Fraction(6.623)  # the case the old charge (ε's own value) undercharged
    assert q.report_cost() == realized


def test_prefix_discovery_charges_its_oracles_realized_epsilon(tmp_path):
    q = build_query("pem", epsilon=1.7, top_k=3, alphabet="ab", max_length=4)
    assert q.report_cost() == max(report_charge(m) for m in q.mechanisms)
    with Accountant.create(tmp_path / "l", Population(name="p", lifetime_cap="10")) as acc:
        rec = q.charge(acc, "q1")
        assert rec.epsilon == q.report_cost() == acc.spent()


def test_heavy_hitters_retry_is_refused_and_charges_once(tmp_path):
    with Accountant.create(tmp_path / "l", Population(name="p", lifetime_cap="10")) as acc:
        kw = dict(epsilon=2.0, alphabet="ab", max_length=4, top_k=3, accountant=acc, query_id="q1")
        WORDS.ldp.heavy_hitters("w", **kw)
        spent = acc.spent()
        assert spent == build_query("pem", epsilon=2.0, top_k=3, alphabet="ab", max_length=4).report_cost()
        with pytest.raises(LDPParameterError, match="new query id"):  # a second run would be a free fresh release
            WORDS.ldp.heavy_hitters("w", **kw)
        assert acc.spent() == spent and len(acc.history()) == 1 and acc.release_status("q1") == "released"


def test_heavy_hitters_bad_seed_spends_nothing(tmp_path):
    with Accountant.create(tmp_path / "l", Population(name="p", lifetime_cap="10")) as acc:
        with pytest.raises(LDPParameterError):
            WORDS.ldp.heavy_hitters("w", epsilon=2.0, alphabet="ab", max_length=4, accountant=acc, query_id="q1", seed="not-a-seed")
        assert acc.spent() == 0 and acc.history() == []


def test_heavy_hitters_misspelt_option_is_the_librarys_error(tmp_path):
    with Accountant.create(tmp_path / "l", Population(name="p", lifetime_cap="10")) as acc:
        with pytest.raises(LDPArgumentError, match="sede"):  # was a bare TypeError from the dataclass
            WORDS.ldp.heavy_hitters("w", epsilon=2.0, alphabet="ab", max_length=4, sede=1, accountant=acc, query_id="q1")
        assert acc.spent() == 0


@pytest.mark.parametrize("bad", [["ab", "ab"], ["ab", "ba", "b"], ["ab", None]])
def test_heavy_hitters_refuses_a_bad_set_before_the_spend(tmp_path, bad):
    sets = pl.DataFrame({"s": [["ab", "ba"], ["ab"]] * 10 + [bad]})
    with Accountant.create(tmp_path / "l", Population(name="p", lifetime_cap="10")) as acc:
        with pytest.raises(LDPInputError):  # a repeated string / a set past set_size / a null string: refused, nothing charged
            sets.ldp.heavy_hitters("s", set_size=2, epsilon=2.0, alphabet="ab", max_length=4, accountant=acc, query_id="q1")
        assert acc.spent() == 0 and acc.history() == [] and acc.release_status("q1") is None
