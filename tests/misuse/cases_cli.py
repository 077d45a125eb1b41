"""The CLI misuse table: every command's options × bad value classes, file inputs that are
missing, directories, empty, malformed or mis-named (with a planted data value), ledgers and
report files. ``{D}`` is the fixture directory (:mod:`.cli_fixtures`). Each case runs plain and
with ``--json``."""

from __future__ import annotations

BAD_INT = ["0", "-1", "2.5", "abc", "nan", "", "true"]
BAD_EPS = ["0", "-1", "nan", "inf", "abc", "", "1e309", "1e-300", "701"]
BAD_PROB = ["-0.1", "1.5", "abc", "nan"]


def _opt_cases(cmd: str, base: list, option: str, values: list, names: list) -> list:
    """Replace (or add) ``option`` in ``base`` with each bad value."""
    out = []
    for v in values:
        argv = list(base)
        if option in argv:
            i = argv.index(option)
            argv[i + 1] = v
        else:
            argv += [option, v]
        label = v if v else "empty"
        out.append((f"{cmd}{option}={label}", argv, names))
    return out


def cli_cases() -> list:
    cases: list = []
    # -- simulate ----------------------------------------------------------------------------------
    sim = ["simulate", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "200", "--seed", "1"]
    cases += _opt_cases("simulate", sim, "--d", BAD_INT + ["1", "2147483649"], ["--d", " d "])
    cases += _opt_cases("simulate", sim, "--epsilon", BAD_EPS, ["epsilon"])
    cases += _opt_cases("simulate", sim, "--n", BAD_INT + ["1000000000000"], ["--n", "n="])
    cases += _opt_cases("simulate", sim, "--repeats", ["0", "-1", "abc", "1000000000"], ["--repeats", "repeats"])
    cases += _opt_cases("simulate", sim, "--mechanism", ["nonexistent", "", "duchi", "l-grr"], ["mechanism"])
    cases += _opt_cases("simulate", sim, "--param", ["epsilon=2", "d=3", "foo=1", "k", "=3", "n=5"], ["--param", "foo", "epsilon", " d", " n"])
    cases += _opt_cases("simulate", sim, "--distribution", ["bogus"], ["--distribution"])
    cases += _opt_cases("simulate", sim, "--postprocess", ["bogus"], ["--postprocess"])
    cases += _opt_cases("simulate", sim, "--truth", ["bogus"], ["--truth"])
    cases += _opt_cases("simulate", sim, "--m", ["0", "-1", "abc"], ["--m"])
    cases += _opt_cases("simulate", sim, "--seed", ["abc"], ["--seed"])
    cases.append(("simulate-orr-no-k", ["simulate", "--mechanism", "orr", "--epsilon", "1", "--n", "200"], ["k", "d"]))
    cases.append(("simulate-cms-rank", ["simulate", "--mechanism", "cms", "--d", "16", "--epsilon", "1", "--n", "200", "--param", "k=2"], ["k=2", "cohorts"]))
    cases.append(("simulate-hcms-rank", ["simulate", "--mechanism", "hcms", "--d", "16", "--epsilon", "1", "--n", "200", "--param", "k=4", "--param", "cohorts=2"], ["k=4"]))
    cases.append(("simulate-k-nan", ["simulate", "--mechanism", "cms", "--d", "4", "--epsilon", "1", "--n", "200", "--param", "k=nan"], ["k "]))
    cases.append(("simulate-dup-param", ["simulate", "--mechanism", "orr", "--d", "4", "--epsilon", "1", "--n", "200", "--param", "k=4", "--param", "k=8"], ["twice"]))
    # -- demo ------------------------------------------------------------------------------------
    demo = ["demo", "--mechanism", "krr", "--epsilon", "1", "--n", "200", "--seed", "1"]
    cases += _opt_cases("demo", demo, "--epsilon", BAD_EPS, ["epsilon"])
    cases += _opt_cases("demo", demo, "--n", BAD_INT + ["1000000000000"], ["--n", "n="])
    cases += _opt_cases("demo", demo, "--mechanism", ["nonexistent", "", "l-grr"], ["mechanism"])  # the families have a demo
    cases += _opt_cases("demo", demo, "--seed", ["abc"], ["--seed"])
    # -- choose ----------------------------------------------------------------------------------
    ch = ["choose", "--d", "8", "--epsilon", "1", "--n", "1000"]
    cases += _opt_cases("choose", ch, "--d", BAD_INT + ["1", "2097153"], ["--d"])
    cases += _opt_cases("choose", ch, "--epsilon", BAD_EPS, ["epsilon"])
    cases += _opt_cases("choose", ch, "--n", BAD_INT, ["--n"])
    cases += _opt_cases("choose", ch, "--m", ["0", "-1", "abc"], ["--m"])
    cases += _opt_cases("choose", ch, "--metric", ["bogus"], ["--metric"])
    cases += _opt_cases("choose", ch, "--delta", ["0", "1", "-1", "abc", "nan"], ["--delta"])
    cases += _opt_cases("choose", ch, "--poison-fraction", ["0", "1", "-1", "abc", "nan"], ["--poison-fraction"])
    cases += _opt_cases("choose", ch, "--family", ["bogus"], ["--family"])
    # -- amplify ---------------------------------------------------------------------------------
    am = ["amplify", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "1000", "--delta", "1e-6"]
    cases += _opt_cases("amplify", am, "--d", BAD_INT + ["1", "2147483649"], ["--d"])
    cases += _opt_cases("amplify", am, "--epsilon", BAD_EPS, ["epsilon"])
    cases += _opt_cases("amplify", am, "--n", ["1", "0", "abc", "nan", "10000000000"], ["--n"])
    cases += _opt_cases("amplify", am, "--delta", ["0", "1", "-1", "abc", "nan"], ["--delta"])
    cases += _opt_cases("amplify", am, "--mechanism", ["nonexistent", "duchi"], ["mechanism"])
    cases += _opt_cases("amplify", am, "--param", ["foo=1", "epsilon=2"], ["foo", "epsilon"])
    # -- mean simulate -----------------------------------------------------------------------------
    mean = ["mean", "simulate", "--mechanism", "duchi", "--epsilon", "1", "--n", "200", "--repeats", "2", "--lower", "0", "--upper", "1"]
    cases += _opt_cases("mean", mean, "--epsilon", BAD_EPS, ["epsilon"])
    cases += _opt_cases("mean", mean, "--n", ["1", "0", "abc", "1000000000"], ["--n"])
    cases += _opt_cases("mean", mean, "--repeats", ["0", "abc", "1000000"], ["--repeats"])
    cases += _opt_cases("mean", mean, "--lower", ["nan", "inf", "abc", "1"], ["--lower", "lower"])
    cases += _opt_cases("mean", mean, "--upper", ["nan", "inf", "abc", "0", "1e-320"], ["--upper", "upper"])
    cases += _opt_cases("mean", mean, "--mechanism", ["krr", "bogus"], ["--mechanism"])
    cases.append(("mean-work", mean[:6] + ["--n", "100000000", "--repeats", "100000", "--lower", "0", "--upper", "1"], ["--n", "--repeats"]))
    # -- longitudinal simulate ------------------------------------------------------------------------
    lg = ["longitudinal", "simulate", "--mechanism", "l-grr", "--d", "4", "--epsilon-perm", "2", "--epsilon-1", "1", "--rounds", "2",
          "--change-prob", "0.1", "--n", "200", "--seed", "1"]
    cases += _opt_cases("longitudinal", lg, "--d", ["1", "abc", "70000", "2.5"], ["--d"])
    cases += _opt_cases("longitudinal", lg, "--epsilon-perm", ["0", "-1", "nan", "abc", "1e309"], ["epsilon"])
    cases += _opt_cases("longitudinal", lg, "--epsilon-1", ["0", "3", "abc", "nan"], ["epsilon"])
    cases += _opt_cases("longitudinal", lg, "--rounds", ["0", "abc", "20000"], ["--rounds"])
    cases += _opt_cases("longitudinal", lg, "--change-prob", BAD_PROB, ["--change-prob"])
    cases += _opt_cases("longitudinal", lg, "--n", ["1", "abc", "100000000"], ["--n"])
    cases += _opt_cases("longitudinal", lg, "--repeats", ["0", "abc", "5000"], ["--repeats"])
    cases += _opt_cases("longitudinal", lg, "--mechanism", ["krr", "bogus"], ["--mechanism"])
    cases += _opt_cases("longitudinal", lg, "--param", ["foo=1", "epsilon_perm=3", "d=5"], ["foo", "epsilon_perm", " d"])
    big = [a for a in lg]
    big[big.index("--n") + 1] = "10000000"
    big[big.index("--rounds") + 1] = "10000"
    cases.append(("longitudinal-work", big + ["--repeats", "1000"], ["--n", "--rounds", "--repeats"]))
    # -- heavy hitters (input reading) ------------------------------------------------------------------
    hh = ["heavy-hitters", "simulate", "--input", "{D}/good.csv", "--column", "app", "--epsilon", "1", "--top-k", "3", "--max-length", "4", "--seed", "1"]
    for f in ["nope.csv", "adir", "empty.csv", "garbage.parquet", "csv_named.parquet", "notes.txt", "quote.csv"]:
        cases += _opt_cases("heavy-hitters", hh, "--input", ["{D}/" + f], [f, "--input"])
    cases += _opt_cases("heavy-hitters", hh, "--column", ["nope"], ["nope", "--column"])
    cases += _opt_cases("heavy-hitters", hh, "--epsilon", ["0", "abc", "nan"], ["epsilon"])
    cases += _opt_cases("heavy-hitters", hh, "--top-k", ["0", "abc", "100000"], ["--top-k"])
    cases += _opt_cases("heavy-hitters", hh, "--method", ["bogus"], ["--method"])
    # -- verify ----------------------------------------------------------------------------------
    cases.append(("verify-unknown", ["verify", "nonexistent"], ["nonexistent"]))
    cases.append(("verify-empty-name", ["verify", ""], ["mechanism"]))
    cases.append(("verify-report-dir", ["verify", "krr", "--quick", "--report", "{D}/adir"], ["--report"]))
    cases.append(("verify-report-missing-dir", ["verify", "krr", "--quick", "--report", "{D}/no/such/dir/r.md"], ["--report"]))
    cases.append(("verify-seed", ["verify", "krr", "--seed", "abc"], ["--seed"]))
    # -- budget ------------------------------------------------------------------------------------
    init = ["budget", "init", "{D}/new.db", "--population", "p", "--lifetime-cap", "5"]
    cases += _opt_cases("budget-init", init, "--lifetime-cap", ["1e309", "inf", "nan", "-1", "0", "abc", "1e99999999", "10000001"], ["lifetime_cap", "--lifetime-cap"])
    cases += _opt_cases("budget-init", init, "--cohorts", ["0", "-1", "2097152", "abc", "1.5"], ["cohorts"])
    cases += _opt_cases("budget-init", init, "--period-cap", ["0", "abc", "10", "nan"], ["period"])
    cases += _opt_cases("budget-init", init, "--period", ["bogus"], ["--period"])
    cases.append(("budget-init-dir", ["budget", "init", "{D}/adir", "--population", "p", "--lifetime-cap", "5"], ["adir"]))
    cases.append(("budget-init-exists", ["budget", "init", "{D}/afile", "--population", "p", "--lifetime-cap", "5"], ["afile"]))
    cases.append(("budget-init-empty-pop", ["budget", "init", "{D}/new2.db", "--population", "", "--lifetime-cap", "5"], ["population"]))
    for sub in (["show"], ["history"], ["central", "--delta", "1e-6"], ["spend-check", "--epsilon", "1"], ["backup"]):
        for f in ["nope.db", "adir", "notdb.db"]:
            argv = ["budget", sub[0], "{D}/" + f] + sub[1:] + (["{D}/backup.db"] if sub[0] == "backup" else [])
            cases.append((f"budget-{sub[0]}-{f}", argv, [f]))
    cases.append(("budget-backup-to-dir", ["budget", "backup", "{D}/ledger.db", "{D}/adir"], ["adir"]))
    cases.append(("budget-backup-no-parent", ["budget", "backup", "{D}/ledger.db", "{D}/no/such/b.db"], ["b.db", "directory"]))
    sc = ["budget", "spend-check", "{D}/ledger.db", "--epsilon", "1"]
    cases += _opt_cases("budget-spend-check", sc, "--epsilon", ["0", "-1", "abc", "1e309", "inf", "nan", "1e99999999", ""], ["epsilon"])
    cases += _opt_cases("budget-spend-check", sc, "--cohorts", ["abc", "-1", "99", "1,abc", ""], ["cohorts"])
    cases += _opt_cases("budget-central", ["budget", "central", "{D}/ledger.db", "--delta", "1e-6"], "--delta", ["0", "1", "abc", "nan"], ["--delta", "delta"])
    # -- aggregate ---------------------------------------------------------------------------------
    for f in ["nope.parquet", "garbage.parquet", "plain.parquet", "adir", "notes.txt", "csv_named.parquet", "empty.csv"]:
        cases.append((f"aggregate-{f}", ["aggregate", "{D}/" + f, "--mechanism-from-metadata"], [f]))
    for f in ["state_list.json", "state_garbage.json", "state_object.json", "adir"]:
        cases.append((f"aggregate-state-{f}", ["aggregate", "{D}/reports", "--mechanism-from-metadata", "--state", "{D}/" + f], [f]))
    cases.append(("aggregate-no-flag", ["aggregate", "{D}/reports"], ["--mechanism-from-metadata"]))
    cases.append(("aggregate-dask-address", ["aggregate", "{D}/reports", "--mechanism-from-metadata", "--executor", "dask", "--address", "notanaddress"], ["--address"]))
    cases.append(("aggregate-postprocess", ["aggregate", "{D}/reports", "--mechanism-from-metadata", "--postprocess", "bogus"], ["--postprocess"]))
    # -- collect -----------------------------------------------------------------------------------
    jobs = {
        "unknown": ["position", "categories"], "typed": ["typed.csv"], "quote": ["quote.csv"], "empty": ["empty.csv"],
        "header_only": ["header_only.csv", "empty", "no data", "users"], "garbage": ["garbage.parquet"], "csv_named": ["csv_named.parquet"],
        "dir": ["adir"], "txt": ["notes.txt", ".txt"], "missing_input": ["nope.csv"], "no_column": ["nope"],
        "est_dir": ["estimates"], "est_txt": ["estimates"], "plot_txt": ["plot"], "plot_dir": ["plot"], "sink_file": ["reports"],
        "bad_mech": ["nonexistent"], "bad_eps": ["epsilon"], "huge_eps": ["epsilon"], "set_cats": ["categories"],
        "rank": ["k=2", "cohorts"], "dup_param": ["epsilon"], "unknown_param": ["foo"], "unknown_key": ["bogus"],
        "ledger_dir": ["adir"], "ledger_notdb": ["notdb.db"], "ledger_missing": ["nope.db"], "budget_partial": ["query_id"],
    }
    for j, names in jobs.items():
        cases.append((f"collect-{j}", ["collect", "{D}/job_" + j + ".toml"], names))
    cases.append(("collect-no-job", ["collect", "{D}/nope.toml"], ["nope.toml"]))
    cases.append(("collect-job-dir", ["collect", "{D}/adir"], ["adir"]))
    cases.append(("collect-bad-toml", ["collect", "{D}/bad.toml"], ["bad.toml"]))
    cases.append(("collect-address", ["collect", "{D}/job_unknown.toml", "--executor", "dask", "--address", "notanaddress"], ["--address", "reports"]))
    # -- top level ----------------------------------------------------------------------------------
    cases.append(("no-command", ["nosuchcommand"], ["nosuchcommand", "invalid choice"]))
    cases.append(("mechanisms-bad-flag", ["mechanisms", "--bogus"], ["--bogus", "unrecognized"]))
    return cases
