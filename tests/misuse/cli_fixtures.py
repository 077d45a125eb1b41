"""Files the CLI misuse table points at: malformed, empty, mis-named and garbage inputs with a
planted data value (:data:`~tests.misuse.harness.SENTINEL`), ledgers, report files, job files."""

from __future__ import annotations

from pathlib import Path

from .harness import SENTINEL

GOOD_CATS = ["maps", "mail", "chat"]


def _job(path: Path, *, input_path: str, column: str = "app", mechanism: str = 'name = "krr"\nepsilon = 1.0\ncategories = ["maps", "mail", "chat"]',
         output: str = 'estimates = "out/est.parquet"', extra: str = "") -> Path:
    path.write_text(f'[input]\npath = "{input_path}"\ncolumn = "{column}"\n\n[mechanism]\n{mechanism}\n\n[output]\n{output}\n{extra}')
    return path


def build(d: Path) -> None:
    """Write every file the table's argv templates name (``{D}`` is ``d``)."""
    import ldp_plugin as ldp
    from ldp_plugin.accountant import Accountant, Population
    from ldp_plugin.adapters import privatize
    from ldp_plugin.persist import write_reports

    import polars as pl

    rows = ["maps", "mail", "chat"] * 100
    (d / "good.csv").write_text("app\n" + "\n".join(rows) + "\n")
    (d / "unknown.csv").write_text("app\n" + "\n".join(rows + [SENTINEL]) + "\n")
    (d / "typed.csv").write_text("app,n\n" + "\n".join(f"{a},{i}" for i, a in enumerate(rows)) + f"\nmaps,{SENTINEL}\n")
    (d / "quote.csv").write_text('app\n"maps\nmail\n' + f"{SENTINEL},,,\n" * 60)
    (d / "empty.csv").write_text("")
    (d / "header_only.csv").write_text("app\n")
    (d / "garbage.parquet").write_text(SENTINEL * 20)
    (d / "csv_named.parquet").write_text("app\n" + "\n".join(rows + [SENTINEL]) + "\n")
    (d / "notes.txt").write_text(SENTINEL)
    (d / "adir").mkdir()
    (d / "adir" / "a.csv").write_text("app\nmaps\n")
    (d / "adir" / "b.parquet").write_text(SENTINEL)
    (d / "afile").write_text(SENTINEL)
    (d / "notdb.db").write_text(SENTINEL * 50)
    (d / "state_list.json").write_text("[1, 2, 3]")
    (d / "state_garbage.json").write_text(SENTINEL)
    (d / "state_object.json").write_text('{"format": "nope"}')
    (d / "bad.toml").write_text(f"[input\npath = {SENTINEL}\n")
    Accountant.create(d / "ledger.db", Population(name="p", lifetime_cap="5", cohorts=4))
    mech = ldp.KRR(epsilon=1.0, categories=GOOD_CATS)
    reports = privatize(pl.DataFrame({"app": rows}).lazy(), "app", mech, seed=1)
    write_reports(reports, d / "reports" / "part-0.parquet", mech)
    pl.DataFrame({"x": [1, 2, 3]}).write_parquet(d / "plain.parquet")
    (d / "out").mkdir()
    # collect jobs
    _job(d / "job_unknown.toml", input_path="unknown.csv")
    _job(d / "job_typed.toml", input_path="typed.csv", column="n", mechanism='name = "krr"\nepsilon = 1.0\nd = 4')
    _job(d / "job_quote.toml", input_path="quote.csv")
    _job(d / "job_empty.toml", input_path="empty.csv")
    _job(d / "job_header_only.toml", input_path="header_only.csv")
    _job(d / "job_garbage.toml", input_path="garbage.parquet")
    _job(d / "job_csv_named.toml", input_path="csv_named.parquet")
    _job(d / "job_dir.toml", input_path="adir")
    _job(d / "job_txt.toml", input_path="notes.txt")
    _job(d / "job_missing_input.toml", input_path="nope.csv")
    _job(d / "job_no_column.toml", input_path="good.csv", column="nope")
    _job(d / "job_est_dir.toml", input_path="good.csv", output='estimates = "out"')
    _job(d / "job_est_txt.toml", input_path="good.csv", output='estimates = "out/est.txt"')
    _job(d / "job_plot_txt.toml", input_path="good.csv", output='estimates = "out/est.parquet"\nplot = "out/plot.txt"')
    _job(d / "job_plot_dir.toml", input_path="good.csv", output='estimates = "out/est.parquet"\nplot = "out"')
    _job(d / "job_sink_file.toml", input_path="good.csv", output='estimates = "out/est.parquet"\nreports = "afile"')
    _job(d / "job_bad_mech.toml", input_path="good.csv", mechanism='name = "nonexistent"\nepsilon = 1.0')
    _job(d / "job_bad_eps.toml", input_path="good.csv", mechanism='name = "krr"\nepsilon = -1.0\ncategories = ["maps", "mail", "chat"]')
    _job(d / "job_huge_eps.toml", input_path="good.csv", mechanism='name = "krr"\nepsilon = 1e309\ncategories = ["maps", "mail", "chat"]')
    _job(d / "job_set_cats.toml", input_path="good.csv", mechanism='name = "krr"\nepsilon = 1.0\ncategories = ["maps", "mail", "maps"]')
    _job(d / "job_rank.toml", input_path="good.csv", mechanism='name = "cms"\nepsilon = 1.0\ncategories = ["maps", "mail", "chat"]\nparams = {k = 2, cohorts = 1}')
    _job(d / "job_dup_param.toml", input_path="good.csv", mechanism='name = "krr"\nepsilon = 1.0\ncategories = ["maps", "mail", "chat"]\nparams = {epsilon = 2.0}')
    _job(d / "job_unknown_param.toml", input_path="good.csv", mechanism='name = "krr"\nepsilon = 1.0\ncategories = ["maps", "mail", "chat"]\nparams = {foo = 2}')
    _job(d / "job_unknown_key.toml", input_path="good.csv", extra="[collection]\nbogus = 1\n")
    _job(d / "job_ledger_dir.toml", input_path="good.csv", extra='[budget]\nledger = "adir"\nquery_id = "q1"\n')
    _job(d / "job_ledger_notdb.toml", input_path="good.csv", extra='[budget]\nledger = "notdb.db"\nquery_id = "q1"\n')
    _job(d / "job_ledger_missing.toml", input_path="good.csv", extra='[budget]\nledger = "nope.db"\nquery_id = "q1"\n')
    _job(d / "job_budget_partial.toml", input_path="good.csv", extra='[budget]\nledger = "ledger.db"\n')
