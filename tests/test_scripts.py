"""scripts/: the examples call the library, never ``gflkit`` through a subprocess, and keep working."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"script_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_script_runs_the_command_line_in_a_subprocess():
    using = sorted(p.name for p in SCRIPTS.glob("*.py") if "subprocess" in p.read_text(encoding="utf-8"))
    assert not using, f"call the library instead of gflkit in a subprocess: {', '.join(using)}"


def test_regime_map_compare_args_become_compare_settings():
    from gflkit.config import EpisodeConfig, TrainConfig

    settings = _script("regime_map")._compare_settings("--similarity combined --steps 20 --k-shot 3 --episodes 2")
    assert settings["model_overrides"] == {"similarity": "combined"}
    assert settings["train_cfg"] == TrainConfig(steps=20) and settings["episode_cfg"] == EpisodeConfig(k_shot=3)
    assert settings["episodes"] == 2
    own = _script("regime_map")._compare_settings("--lr 0.001 --patience 3")["train_cfg"]  # defaults of None
    assert own == TrainConfig(lr=0.001, patience=3)
    for bad, needle in (("--seed 3", "--seed is no setting"), ("--steps", "--NAME VALUE pairs")):
        with pytest.raises(ValueError, match=needle):
            _script("regime_map")._compare_settings(bad)


@pytest.mark.slow
def test_regime_map_writes_a_cell_per_pair_and_skips_the_ones_it_holds(tmp_path, capsys):
    regime_map = _script("regime_map")
    out = tmp_path / "map.csv"
    args = ["--x", "homophily", "--x-values", "0.3,0.8", "--y", "snr", "--y-values", "0.32", "--models", "lp,majority",
            "--reference", "lp", "--seeds", "0", "--graphs", "3,1,2", "--nodes", "100,150",
            "--compare-args", "--k-shot 3", "--data-root", str(tmp_path / "root"), "-o", str(out)]
    assert regime_map.main(args) == 0
    table = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(table.columns[:3]) == ["homophily", "snr", "model"] and len(table) == 4
    assert list(table.homophily) == ["0.3", "0.3", "0.8", "0.8"] and capsys.readouterr().out == ""
    assert regime_map.main(args) == 0 and "already in" in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_csv(out, dtype=str, keep_default_na=False), table)


def test_gmeta_budget_replays_the_training_loops_early_stopping():
    replay = _script("gmeta_budget").replay
    curve = pd.DataFrame({"step": [20, 40, 60, 80, 100, 120], "val_accuracy": [0.5, 0.6, 0.6, 0.55, 0.7, 0.65]})
    # a tie is no gain (the loop keeps the first best); two rounds without gain stop it at step 80
    assert replay(curve, 2) == {"stop_step": 80, "stopped_early": True, "best_step": 40, "best_val": 60.0}
    assert replay(curve, 3) == {"stop_step": 120, "stopped_early": False, "best_step": 100, "best_val": 70.0}


def test_tlp_search_table_reads_the_stored_search_and_test_rows(tmp_path):
    (tmp_path / "seed1").mkdir()
    for path, val in ((tmp_path / "toy", 60.0), (tmp_path / "seed1" / "toy", 70.0)):
        pd.DataFrame({"preset": ["grace-cora", "grace-citeseer"], "transductive_steps": [200, 0],
                      "val_accuracy": [val, val + 1], "pretrain_step": [400, 20], "chosen": [False, True]}).to_csv(
            f"{path}_search.csv", index=False)
        pd.DataFrame({"model": ["gcn", "tlp"], "accuracy": [70.0, 71.5], "ci95": [2.0, 1.5],
                      "delta": [None, 1.5], "delta_lo": [None, -0.5], "delta_hi": [None, 3.5],
                      "p_value": [None, 0.12]}).to_csv(f"{path}_test.csv", index=False)
    text = _script("tlp_search").markdown(tmp_path, ["Toy=toy", "Toy, seed 1=seed1/toy"], detail=["Toy"])
    lines = text.splitlines()
    assert lines[2] == ("| Toy | grace-citeseer, 0 | 61.00 (60.00–61.00) | 71.50 ± 1.50 | 70.00 ± 2.00 "
                        "| +1.50 [-0.50, +3.50], 0.12 |")
    assert lines[3].startswith("| Toy, seed 1 | grace-citeseer, 0 | 71.00 (70.00–71.00) |")
    assert "| Toy | grace-citeseer | 0 (chosen) | 61.00 | 20 |" in lines and not any("seed 1 | grace" in x for x in
                                                                                      lines[5:])


def test_tlp_search_table_of_bgrl_reads_its_own_files(tmp_path):
    pd.DataFrame({"preset": ["bgrl-wikics", "bgrl-amazon-computers"], "transductive_steps": [200, 0],
                  "val_accuracy": [62.0, 60.0], "pretrain_step": [60, 60], "chosen": [True, False]}).to_csv(
        tmp_path / "toy_tlp-bgrl_search.csv", index=False)
    pd.DataFrame({"model": ["gcn", "tlp-bgrl"], "accuracy": [70.0, 69.0], "ci95": [2.0, 1.5],
                  "delta": [None, -1.0], "delta_lo": [None, -2.5], "delta_hi": [None, 0.5],
                  "p_value": [None, 0.2]}).to_csv(tmp_path / "toy_tlp-bgrl_test.csv", index=False)
    search = _script("tlp_search")
    lines = search.markdown(tmp_path, ["Toy=toy"], detail=[], model="tlp-bgrl").splitlines()
    assert "TLP (BGRL), test" in lines[0] and len(lines) == 3  # no label detailed: no second table
    assert lines[2].startswith("| Toy | bgrl-wikics, 200 | 62.00 (60.00–62.00) | 69.00 ± 1.50 |")
    assert set(search.PRESETS) == {"tlp", "tlp-bgrl"} and search.stem("toy", "tlp") == "toy"


def test_tlp_search_first_presets_are_the_models_defaults():
    # The docs call GRACE's Cora and BGRL's WikiCS settings the models' defaults: the two copies must agree.
    from gflkit.models.baselines import TRANSFER

    for model, presets in _script("tlp_search").PRESETS.items():
        first = next(iter(presets.values()))
        defaults = TRANSFER[model](8, 3).options
        assert {key: defaults[key] for key in first} == first, model


def test_compare_speed_joins_the_trees_model_by_model(tmp_path, capsys):
    rows = [{"data": "d", "model": m, "tree": tree, "seconds": s, "cpu_seconds": c, "peak_rss_mb": rss,
             "same_rows": same} for m, tree, s, c, rss, same in (
                ("gfl-mean", "this", 10.0, 8.0, 500, True), ("gfl-mean", "base", 30.0, 16.0, 480, True),
                ("agf", "this", 5.0, 4.0, 510, True), ("agf", "base", 20.0, 12.0, 490, False))]
    path = tmp_path / "bench.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    speed = _script("compare_speed")
    speed.main([str(path)])
    table = capsys.readouterr().out.splitlines()
    assert table[2].startswith("| gfl-mean | 30.0 | 10.0 | 3.00x | 16.0 | 8.0 | 2.00x | 480 | 500 | yes |")
    assert table[3].endswith("| no |") and table[4].startswith("| all 2 rows | 50 | 15 | 3.33x | 28 | 12 | 2.33x")
    speed.main([str(path), "--total", "rss"])
    assert capsys.readouterr().out.strip() == "+4%"
    speed.main([str(path), "--minutes", "before"])
    assert capsys.readouterr().out.strip() == "1"
    later = tmp_path / "later.csv"
    pd.DataFrame([r | {"seconds": r["seconds"] * 10} for r in rows if r["model"] == "agf"]).to_csv(later, index=False)
    speed.main([str(path), "--with", str(later), "--minutes", "now"])  # 10 s of gfl-mean, 50 s of agf
    assert capsys.readouterr().out.strip() == "1"
    speed.main([str(path), "--with", str(later)])
    assert capsys.readouterr().out.splitlines()[3].startswith("| agf | 200.0 | 50.0 | 4.00x")
    new = tmp_path / "new.csv"  # a model the earlier tree did not have: in the time of a compare, not the ratios
    pd.DataFrame(rows + [rows[0] | {"model": "ridge", "seconds": 45.0}]).to_csv(new, index=False)
    speed.main([str(new)])
    table = capsys.readouterr().out.splitlines()
    assert table[4] == "| ridge | | 45.0 | | | 8.0 | | | 500 | |"
    assert table[5].startswith("| all 2 rows | 50 | 15 | 3.33x") and table[6].startswith("| every row | 50 | 60 |")
    speed.main([str(new), "--minutes", "now", "--seeds", "3"])  # 3 x 60 s
    assert capsys.readouterr().out.strip() == "3"
    speed.main([str(new), "--changed", "agf"])  # agf ran another protocol: shown, out of the ratios
    table = capsys.readouterr().out.splitlines()
    assert table[3].startswith("| agf (other work) | 20.0 | 5.0 |")
    assert table[5].startswith("| all 1 rows | 30 | 10 | 3.00x")
    assert table[6].startswith("| every row | 50 | 60 |")
    speed.main([str(new), "--changed", "agf", "--total", "wall"])
    assert capsys.readouterr().out.strip() == "3.00x"
