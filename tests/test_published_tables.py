"""Every generated table of the README and docs/ is what its marker's command prints from the stored CSVs."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]


def _script(name: str):
    """A script of scripts/ as a module; the folder is on the path while it loads (scripts import each other)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "scripts"))
    return module


publish = _script("publish")
markdown_table = _script("markdown_table")
paired = _script("paired")

MARKED = [(page.relative_to(REPO).as_posix(), command, text)
          for page in publish.pages() for command, text in publish.tables(page.read_text(encoding="utf-8"))]


def test_results_tables_are_marked():
    pages = {page for page, _, _ in MARKED}
    assert {"README.md", "docs/tables.md"} <= pages
    assert sum(page == "docs/tables.md" for page, _, _ in MARKED) >= 4  # three Table 2 blocks and Table 3


@pytest.mark.parametrize("page,command,text", MARKED, ids=[f"{p}:{i}" for i, (p, _, _) in enumerate(MARKED)])
def test_published_table_is_its_command_output(page, command, text):
    assert publish.output(command) == text, f"{page}: rerun python scripts/publish.py ({command})"


def _compare_csv(path: Path, p_values: list[float], lo: list[float]) -> None:
    rows = [{"model": "gfl", "aggregator": "mean", "accuracy": 80.0, "ci95": 1.0, "n_seeds": 3, "n_graphs": 6,
             "reference": None, "delta": None, "delta_lo": None, "delta_hi": None, "p_value": None}]
    for i, (p, low) in enumerate(zip(p_values, lo)):
        rows.append({"model": f"m{i}", "aggregator": None, "accuracy": 70.0, "ci95": 1.0, "n_seeds": 3,
                     "n_graphs": 6, "reference": "gfl-mean", "delta": low - 1.0, "delta_lo": low - 2.0,
                     "delta_hi": low, "p_value": p})
    pd.DataFrame(rows).to_csv(path, index=False)


def test_bold_only_when_shown_after_holm(tmp_path, capsys):
    # Three intervals below zero; Holm keeps the first (0.001 x 3) and drops the others (0.03 x 2, then no lower).
    csv = tmp_path / "fam.csv"
    _compare_csv(csv, [0.001, 0.03, 0.04], [-1.0, -0.5, -0.1])
    markdown_table.main([f"F={csv}"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].count("**") == 2 and "**" not in lines[4] + lines[5]
    markdown_table.main([f"F={csv}", "--adjust", "none"])
    assert capsys.readouterr().out.count("**") == 6
    assert "−" not in markdown_table.interval(-1.0, -2.0, -0.5, False)  # one minus sign: ASCII


def test_paired_adjusts_over_the_whole_table():
    rng = [0.81, 0.79, 0.80, 0.82]
    records = pd.DataFrame([
        {"family": fam, "variant": var, "seed": s, "graph": g, "episode": 0,
         "accuracy": rng[(s + g) % 4] - (0.05 if var == "protonet" else 0.0) + 0.01 * ((s * g) % 3)}
        for fam in ("a", "b") for var in ("gfl", "protonet") for s in range(3) for g in range(4)])
    table = paired.paired(records, "gfl")
    raw = table["p_value"].dropna().to_numpy()
    adjusted = table["p_adjusted"].dropna().to_numpy()
    assert len(raw) == 2
    assert min(adjusted) == pytest.approx(min(1.0, 2 * min(raw)))  # Holm over both families' rows
    assert paired.paired(records, "gfl", adjust="none")["p_adjusted"].dropna().tolist() == raw.tolist()


def test_check_fails_on_a_stale_table(tmp_path):
    csv = tmp_path / "fam.csv"
    _compare_csv(csv, [0.001], [-1.0])
    page = tmp_path / "page.md"
    page.write_text(f"text\n<!-- table: python scripts/markdown_table.py F={csv} -->\n| stale |\n<!-- end table -->\n")
    check = [sys.executable, str(REPO / "scripts" / "publish.py"), str(page), "--check"]
    assert subprocess.run(check, capture_output=True, timeout=120).returncode == 1
    assert subprocess.run(check[:-1], capture_output=True, timeout=120).returncode == 0
    assert "| stale |" not in page.read_text() and "**" in page.read_text()
    assert subprocess.run(check, capture_output=True, timeout=120).returncode == 0


def test_rule_check_reads_the_orders_from_the_csvs(tmp_path, capsys):
    rule_check = _script("rule_check")
    means = {"gfl": 80.0, "protonet": 78.0, "transfer-head": 85.0, "agf": 70.0, "lp": 50.0, "tlp": 60.0}
    for name in rule_check.NAMES:
        rows = [{"model": m, "aggregator": "mean" if m == "gfl" else None, "accuracy": acc, "n_seeds": 3,
                 "reference": None if m == "gfl" else "gfl-mean", "delta": None if m == "gfl" else acc - 80.0,
                 "p_value": None if m == "gfl" else 0.5} for m, acc in means.items()]
        pd.DataFrame(rows).to_csv(tmp_path / f"{name}.csv", index=False)
    table3 = ["--table3", str(REPO / "results" / "study" / "table3.csv")]
    rule_check.main(["--table2", str(tmp_path), "--details", *table3])
    lines = [line for line in capsys.readouterr().out.splitlines() if "transfer head" in line]
    assert len(lines) == 7 and all(line.endswith("| yes |") for line in lines)
    for name in rule_check.NAMES:  # a few-shot model above the transfer head: every family fails
        df = pd.read_csv(tmp_path / f"{name}.csv")
        df.loc[df["model"] == "protonet", "accuracy"] = 90.0
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    rule_check.main(["--table2", str(tmp_path), "--details", *table3])
    lines = [line for line in capsys.readouterr().out.splitlines() if "transfer head" in line]
    assert len(lines) == 7 and all(line.endswith("| no |") for line in lines)


def test_predict_candidates_show_prints_auto_against_the_run_and_writes_nothing(tmp_path, monkeypatch, capsys):
    predict_candidates = _script("predict_candidates")
    rows = []
    for graph, (auto, model_acc, lp_acc) in enumerate([("model", 0.8, 0.5), ("lp", 0.7, 0.6)]):
        for name, acc in (("model", model_acc), ("lp", lp_acc)):
            rows.append({"family": "f", "graph": graph, "shots": 3, "draw": 0, "candidate": name,
                         "true_accuracy": acc, "pick_one_se": name == auto})
    pd.DataFrame(rows).to_csv(tmp_path / "records.csv", index=False)
    monkeypatch.setattr(sys, "argv", ["predict_candidates.py", "--show", "--out", str(tmp_path)])
    predict_candidates.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("| f | 3 | 2 | -5.0 |")  # (0 - 10) / 2 points
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.csv"]


TYPED = REPO / "tests" / "typed_numbers.csv"


def test_typed_numbers_finds_prose_and_typed_tables_only():
    page = ("Protonet reaches 71.3% here.\n| a | 0.25 |\n`--lr 0.01` and Python 3.11\n"
            "```\n93.5 in a code block\n```\n"
            "<!-- table: python scripts/x.py -->\n| 88.1 |\n<!-- end table -->\n"
            "GFL <!-- value: python scripts/value.py a.csv --column accuracy -->76.4<!-- end value -->"
            " and 12 graphs.\n")
    assert publish.typed_numbers(page) == ["71.3%", "0.25"]


def test_no_number_is_typed_beyond_the_list_of_those_still_typed():
    # The list only shrinks: a page may lose typed numbers (and the list with it), never gain one. A result
    # belongs in a generated table or value (docs/contributing.md, "How numbers are published").
    allowed = {(r.page, str(r.number)): r.count for r in pd.read_csv(TYPED, dtype={"number": str}).itertuples()}
    found = publish.typed_inventory(publish.pages())
    extra = [f"{page}: {number} ({n} typed, {allowed.get((page, number), 0)} allowed)"
             for (page, number), n in sorted(found.items()) if n > allowed.get((page, number), 0)]
    assert not extra, "numbers typed by hand; generate them (scripts/publish.py):\n" + "\n".join(extra)
    gone = [f"{page}: {number}" for (page, number), n in sorted(allowed.items()) if found.get((page, number), 0) < n]
    assert not gone, ("typed numbers removed (good): shrink the list with python scripts/publish.py --typed > "
                      "tests/typed_numbers.csv, so they cannot come back:\n" + "\n".join(gone))


def test_value_marker_is_rewritten(tmp_path):
    csv = tmp_path / "r.csv"
    pd.DataFrame({"model": ["gfl", "protonet"], "aggregator": ["mean", None], "accuracy": [76.44, 73.1]}).to_csv(
        csv, index=False)
    command = f"python scripts/value.py {csv} --where model=gfl-mean --column accuracy"
    text = f"GFL <!-- value: {command} -->0<!-- end value -->%"
    assert publish.regenerate(text) == text.replace("-->0<", "-->76.4<")
    assert publish.tables(text) == [(command, "0")]


def test_rule_check_held_out_shows_an_order_only_from_the_paired_records(tmp_path, capsys):
    rule_check = _script("rule_check")
    # lp below Protonet (clear features); the transfer head 10 points above every few-shot model on every unit
    means = {"gfl-mean": 0.70, "protonet": 0.70, "transfer-head": 0.80, "agf": 0.60, "lp": 0.50, "tlp": 0.55,
             "tlp-sup": 0.56, "gpn": 0.65}
    for name in rule_check.HELD_OUT:
        rows, records = [], []
        for key, acc in means.items():
            model, _, agg = key.partition("-") if key == "gfl-mean" else (key, "", "")
            rows.append({"model": model, "aggregator": agg or None, "accuracy": 100 * acc,
                         "reference": None if key == "gfl-mean" else "gfl-mean",
                         "delta": None if key == "gfl-mean" else 100 * (acc - 0.70), "p_adjusted": 0.5,
                         "k_shot": 5 if name == "citeseer_xnet" else 10})
            records += [{"row": key, "seed": s, "graph_id": g, "episode": e,
                         "accuracy": acc + 0.01 * ((s + 2 * g + e + len(key)) % 3) * (key != "transfer-head")}
                        for s in range(3) for g in range(4) for e in range(2)]
        pd.DataFrame(rows).to_csv(tmp_path / f"{name}.csv", index=False)
        pd.DataFrame(records).to_csv(tmp_path / f"{name}_records.csv", index=False)
    rule_check.main(["--held-out", "--rule-dir", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    first = [line for line in lines if "transfer head" in line and "Transfer head above" in line]
    assert len(first) == len(rule_check.HELD_OUT) and all(line.endswith("| yes | yes |") for line in first)
    protonet = [line for line in lines if "Protonet above GFL-mean" in line]
    assert protonet and all(line.endswith("| yes | no |") for line in protonet)  # a hit by means, not shown
    gpn = {line.split(" | ")[1]: line.split(" | ")[2] for line in lines if line.startswith("| GPN at 10 shots")}
    assert gpn[rule_check.HELD_OUT["facebook_structure"]] == "GPN above Protonet"  # homophilous, 10 shots
    assert gpn[rule_check.HELD_OUT["chameleon_structure"]] == "Protonet above GPN"  # heterophilous
    assert gpn[rule_check.HELD_OUT["citeseer_xnet"]] == "Protonet above GPN"  # 5 shots
    (tmp_path / "citeseer_xnet_records.csv").unlink()
    with pytest.raises(SystemExit, match="citeseer_xnet_records.csv"):
        rule_check.main(["--held-out", "--rule-dir", str(tmp_path)])


def test_paired_rows_bold_by_the_adjusted_p_value_of_their_own_file(tmp_path, capsys):
    csv = tmp_path / "sweep.csv"
    _compare_csv(csv, [0.01, 0.04], [-1.0, -0.5])  # Holm: 0.01 x 2 and 0.04 x 1, both below 0.05
    df = pd.read_csv(csv).assign(prob_improvement=0.5, dataset="d")
    df.to_csv(csv, index=False)
    markdown_table.main(["--paired", "family=dataset;model", str(csv)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| family | model | accuracy |") and lines[2].startswith("| d | GFL-mean | 80.00 |  |")
    assert [line.count("**") for line in lines[3:]] == [2, 2]
    _compare_csv(csv, [0.01, 0.04, 0.9], [-1.0, -0.5, 0.1])  # now 0.04 x 2 = 0.08: not shown
    pd.read_csv(csv).assign(prob_improvement=0.5, dataset="d").to_csv(csv, index=False)
    markdown_table.main(["--paired", "family=dataset;model", str(csv)])
    assert [line.count("**") for line in capsys.readouterr().out.splitlines()[3:]] == [2, 0, 0]


def test_value_needs_one_matching_row_unless_asked_to_summarise(tmp_path, capsys):
    value = _script("value")
    csv = tmp_path / "c.csv"
    pd.DataFrame({"method": ["a", "a", "b"], "delta": [0.9, 0.95, 0.5]}).to_csv(csv, index=False)
    with pytest.raises(SystemExit, match="2 rows match method=a"):
        value.main([str(csv), "--where", "method=a", "--column", "delta"])
    value.main([str(csv), "--where", "method=a", "--column", "delta", "--agg", "max", "--scale", "100"])
    value.main([str(csv), "--where", "method=b", "--column", "delta", "--format", ".2f"])
    assert capsys.readouterr().out.split() == ["95.0", "0.50"]


def test_no_value_marker_opens_a_line():
    assert publish.misplaced_values("a\n  <!-- value: python scripts/v.py -->1<!-- end value --> b\n") == [2]
    bad = {page.relative_to(REPO).as_posix(): publish.misplaced_values(page.read_text(encoding="utf-8"))
           for page in publish.pages()}
    assert not {page: lines for page, lines in bad.items() if lines}
