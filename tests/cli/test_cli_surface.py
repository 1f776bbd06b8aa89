"""One option scheme across commands: one spelling per option, help from the configs, --config."""
from __future__ import annotations

import inspect
import io
import json
from dataclasses import fields

import click
import pandas as pd
import pytest
from cli_helpers import csv_table, invoke
from gflkit_cli.run import train

from gflkit.config import EpisodeConfig, GFLConfig, TrainConfig, field_help

FAST = ["--steps", "5", "--eval-every", "5", "--k-shot", "5"]


# -- help and defaults from the config dataclasses -----------------------------------------------------

def test_model_train_and_episode_options_take_help_and_default_from_the_configs():
    params = {p.name: p for p in train.params}
    checked = 0
    for cls in (GFLConfig, EpisodeConfig, TrainConfig):
        for f in fields(cls):
            if f.name not in params or f.name == "seed":
                continue
            param = params[f.name]
            assert param.help == field_help(cls, f.name) != "", f.name
            default = param.default
            expected = f.default
            if isinstance(expected, tuple):
                default = tuple(default)
            assert default == expected, f.name
            assert param.show_default is True or expected is None, f.name
            checked += 1
    assert checked >= len(fields(GFLConfig)) + 2 + 8


def _help_sections(command: str) -> list[tuple[str, list[str]]]:
    """The option sections of ``gflkit COMMAND --help``: (title, long flags listed) in order."""
    import re

    sections: list[tuple[str, list[str]]] = []
    current = None
    for line in invoke(command, "--help").stdout.splitlines():
        if line.endswith(" options:") and not line.startswith(" "):
            sections.append((line[:-len(" options:")], []))
            current = sections[-1][1]
        elif not line.strip():
            current = None  # a section ends at a blank line; the epilog is text
        elif current is not None and (m := re.match(r"  (?:-\w, )?(--[\w-]+)", line)):
            current.append(m.group(1))
    return sections


@pytest.mark.parametrize("command, common", [
    ("train", ["--model", "--k-shot", "--steps", "--seed", "--run-dir", "--config", "--data-root", "--output"]),
    ("compare", ["--model", "--seed", "--k-shot", "--steps", "--episodes", "--jobs", "--data-root", "--output",
                 "--records"]),
    ("ablate", ["--drop", "--all", "--seed", "--k-shot", "--steps", "--episodes", "--jobs", "--data-root", "--output",
                "--records"]),
    ("sweep", ["--param", "--values", "--model", "--seed", "--k-shot", "--steps", "--episodes", "--jobs",
               "--data-root", "--output", "--records"]),
    ("evaluate", ["--baseline", "--split", "--episodes", "--seed", "--data-root", "--output"]),
])
def test_help_opens_with_the_common_options_and_lists_each_option_once(command, common):
    from gflkit_cli.main import cli

    sections = _help_sections(command)
    assert sections[0] == ("Common", common)  # the first options after the usage and description
    assert sections[-1][0] == "Advanced" and sections[-1][1][-1] == "--help"
    listed = [flag for _, flags in sections for flag in flags]
    params = cli.commands[command].params
    shown = [next(o for o in p.opts if o.startswith("--")) for p in params
             if isinstance(p, click.Option) and not p.hidden]
    assert sorted(listed) == sorted([*shown, "--help"])  # nothing lost, nothing twice
    if command != "evaluate":
        assert [title for title, _ in sections][:2] == ["Common", "Model"]


def test_compare_says_it_runs_both_aggregators():
    text = " ".join(invoke("compare", "--help").stdout.split())
    assert "mean and att, a row each" in text
    assert "[default: mean]" not in text.split("--aggregator", 1)[1].split("--prototype", 1)[0]


def test_protonet_keeps_its_preset_when_flags_are_left_at_their_defaults(root, tmp_path):
    run = tmp_path / "p"
    csv_table(invoke("train", "--model", "protonet", *FAST, "--run-dir", run, "--data-root", root, "tiny"))
    cfg = json.loads((run / "config.json").read_text())["model_config"]
    assert (cfg["prototype"], cfg["gate"], cfg["recon"]) == ("mean", False, False)


# -- new spellings and old ones on the real commands ------------------------------------------------------

#: The spellings of 0.1.0 removed in the release after it: each is now an unknown option.
REMOVED_SPELLINGS = [
    ("train", "--out"),
    ("evaluate", "--model"),
    ("compare", "--models"), ("compare", "--seeds"), ("compare", "--runs"),
    ("ablate", "--seeds"), ("ablate", "--runs"),
    ("sweep", "--models"), ("sweep", "--seeds"), ("sweep", "--runs"),
    ("preprocess synthetic", "--out"), ("preprocess aminer", "--out"), ("preprocess reddit", "--out"),
    ("preprocess pubmed", "--out"), ("preprocess pubmed", "--name"), ("preprocess tables", "--out"),
    ("preprocess gfl-release", "--out"),
]


@pytest.mark.parametrize("command, spelling", REMOVED_SPELLINGS)
def test_removed_spellings_are_usage_errors(command, spelling, tmp_path):
    result = invoke(*command.split(), spelling, tmp_path / "x")
    assert result.exit_code == 2, result.output
    assert f"No such option: {spelling}" in result.stderr or f"No such option '{spelling}'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_train_run_dir(root, tmp_path):
    new = invoke("train", *FAST, "--run-dir", tmp_path / "new", "--data-root", root, "tiny")
    assert new.exit_code == 0, new.output
    assert (tmp_path / "new" / "best.pt").is_file() and "deprecated" not in new.stderr


def test_train_no_eval_and_deprecated_split_none(root, tmp_path):
    new = invoke("train", *FAST, "--run-dir", tmp_path / "a", "--no-eval", "--data-root", root, "tiny")
    old = invoke("train", *FAST, "--run-dir", tmp_path / "b", "--split", "none", "--data-root", root, "tiny")
    assert new.exit_code == 0 and old.exit_code == 0, old.output
    assert new.stdout == "" and old.stdout == ""
    assert "--split none is deprecated" in old.stderr and "--no-eval" in old.stderr
    bad = invoke("evaluate", "--split", "none", tmp_path / "a")
    assert bad.exit_code == 2 and "--split" in bad.stderr


def test_evaluate_baseline_and_its_old_spelling(root):
    new = invoke("evaluate", "--baseline", "lp", "--k-shot", "5", "--data-root", root, "tiny")
    bare = invoke("evaluate", "lp", "tiny", "--k-shot", "5", "--data-root", root)
    assert csv_table(new).equals(csv_table(bare))
    assert "deprecated" not in new.stderr and "--baseline lp" in bare.stderr


def test_preprocess_out_dir(tmp_path):
    new = invoke("preprocess", "synthetic", "--small", "--graphs", "2,1,1", "--nodes", "60,80",
                 "--out-dir", tmp_path / "new")
    assert new.exit_code == 0, new.output
    assert (tmp_path / "new" / "manifest.json").is_file() and "deprecated" not in new.stderr


def test_compare_model_seed_runs_root(root, tmp_path):
    new = invoke("compare", "tiny", "--model", "lp", "--seed", "0,1", "--no-majority", "--runs-root", tmp_path / "r",
                 "--k-shot", "5", "--data-root", root)
    assert new.exit_code == 0, new.output
    assert csv_table(new).seed[0] == "0,1" and "deprecated" not in new.stderr


@pytest.mark.parametrize("command", ["compare", "ablate", "sweep"])
def test_tables_default_to_three_seeds(command):
    from gflkit import experiments
    from gflkit.names import DEFAULT_SEEDS

    text = " ".join(invoke(command, "--help").stdout.split())
    assert "--seed S[,S...]" in text and "[default: 0,1,2]" in text.split("--seed S[,S...]", 1)[1].split("--", 1)[0]
    assert DEFAULT_SEEDS == (0, 1, 2)
    assert experiments.TableSettings().seeds == DEFAULT_SEEDS
    assert inspect.signature(getattr(experiments, command)).parameters["table"].default is None


def test_ablate_seed_list_is_checked_under_its_name():
    result = invoke("ablate", "--all", "--seed", "0,-1")
    assert result.exit_code == 2 and "--seed" in result.stderr


# -- --config --------------------------------------------------------------------------------------------

def test_config_repeats_a_run_and_flags_override_it(root, tmp_path):
    first = tmp_path / "first"
    invoke("train", *FAST, "--aggregator", "att", "--mu", "0.6", "--run-dir", first, "--data-root", root, "tiny")
    again = invoke("train", "--config", first / "config.json", "--run-dir", tmp_path / "again",
                   "--data-root", root, "tiny")
    varied = invoke("train", "--config", first / "config.json", "--mu", "0.7", "--run-dir", tmp_path / "varied",
                    "--data-root", root, "tiny")
    assert again.exit_code == 0 and varied.exit_code == 0, varied.output
    cfg = {name: json.loads((tmp_path / name / "config.json").read_text()) for name in ("first", "again", "varied")}
    for key in ("model_config", "episode_config", "train_config"):
        assert cfg["again"][key] == cfg["first"][key], key
    assert cfg["varied"]["model_config"]["mu"] == 0.7 and cfg["varied"]["model_config"]["aggregator"] == "att"
    assert cfg["varied"]["train_config"]["steps"] == 5
    assert csv_table(again).accuracy[0] == csv_table(invoke("evaluate", first)).accuracy[0]


def test_config_from_toml(root, tmp_path):
    toml = tmp_path / "settings.toml"
    toml.write_text('[model_config]\naggregator = "att"\nclusters = [16, 4]\n\n'
                    '[episode_config]\nk_shot = 5\n\n[train_config]\nsteps = 5\neval_every = 5\nseed = 3\n')
    result = invoke("train", "--config", toml, "--run-dir", tmp_path / "run", "--data-root", root, "tiny")
    row = csv_table(result).iloc[0]
    assert (row["aggregator"], row["k_shot"], row["seed"]) == ("att", 5, 3)
    cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert cfg["model_config"]["clusters"] == [16, 4] and cfg["train_config"]["steps"] == 5


@pytest.mark.parametrize("text, message", [
    ('[model_config]\nnope = 1\n', "model_config has no setting nope"),
    ('[model_config\n', "not valid TOML"),
])
def test_config_errors_are_one_line_usage_errors(tmp_path, text, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    result = invoke("train", "--config", bad)
    assert result.exit_code == 2 and message in result.stderr
    assert "Traceback" not in result.stderr


# -- overall progress of compare, ablate and sweep -------------------------------------------------------

def test_run_counter_lines_and_eta():
    from gflkit.progress import RunCounter, set_progress

    now = [100.0]
    out = io.StringIO()
    counter = RunCounter(3, "sweep", stream=out, clock=lambda: now[0])
    counter.start("mu=0.5, gfl, seed 0")
    now[0] += 10
    counter.finish()
    counter.start("mu=0.6, gfl, seed 0")
    assert out.getvalue().splitlines() == [
        "sweep: run 1 of 3 (mu=0.5, gfl, seed 0)",
        "sweep: run 2 of 3 (mu=0.6, gfl, seed 0), 1 done in 10s, about 20s left",
    ]
    quiet = io.StringIO()
    RunCounter(2, "x", stream=quiet, enabled=False).start("a")
    set_progress(False, counters=False)  # gflkit -q
    try:
        RunCounter(2, "x", stream=quiet).start("a")
    finally:
        set_progress(True, counters=True)
    assert quiet.getvalue() == ""
    no_bars = io.StringIO()
    set_progress(False)  # --no-progress: bars only; the counters are log lines
    try:
        RunCounter(2, "x", stream=no_bars).start("a")
    finally:
        set_progress(True)
    assert no_bars.getvalue() == "x: run 1 of 2 (a)\n"


def test_run_counter_counts_pool_runs_as_they_end():
    from gflkit.progress import RunCounter

    now = [0.0]
    out = io.StringIO()
    counter = RunCounter(2, "ablate", stream=out, clock=lambda: now[0])
    now[0] += 30
    counter.finished("gate, seed 1")
    now[0] += 30
    counter.finished("full, seed 0")
    assert counter.done == 2
    assert out.getvalue().splitlines() == [
        "ablate: 1 of 2 done (gate, seed 1) in 30s, about 30s left",
        "ablate: 2 of 2 done (full, seed 0) in 1m00s",
    ]


@pytest.mark.parametrize("flags, shown", [([], True), (["-q"], False), (["--no-progress"], True)])
def test_compare_shows_overall_progress_unless_quiet(root, flags, shown):
    result = invoke(*flags, "compare", "tiny", "--model", "lp", "--seed", "0,1", "--k-shot", "5", "--data-root", root)
    assert result.exit_code == 0, result.output
    assert ("compare: run 2 of 2 (lp, seed 1)" in result.stderr) is shown  # --no-progress hides bars only
    assert "majority" not in result.stderr  # the majority rows take no time: they are not counted as runs
    assert "run 1 of" not in result.stdout
    assert "\r" not in result.stderr  # not a terminal: log lines, no bars
    if "--no-progress" in flags:
        assert "per graph" not in result.stderr  # the per-graph baseline's bar (as log lines) is hidden


# -- the Python API reads like the command line ------------------------------------------------------------

def test_train_takes_model_settings_as_keywords_and_returns_a_table_like_evaluate(root, tmp_path):
    import gflkit
    from gflkit.errors import GFLError

    episodes, steps = EpisodeConfig(k_shot=5), TrainConfig(steps=5, eval_every=5)
    run = tmp_path / "att"
    table = gflkit.train("tiny", aggregator="att", mu=0.6, episode_cfg=episodes, train_cfg=steps, run_dir=run,
                         root=root, progress=False)
    assert isinstance(table, pd.DataFrame) and table.aggregator[0] == "att"
    cfg = json.loads((run / "config.json").read_text())["model_config"]
    assert (cfg["aggregator"], cfg["mu"]) == ("att", 0.6)
    scored = gflkit.evaluate(run)
    assert isinstance(scored, pd.DataFrame) and list(scored.columns) == list(table.columns)
    assert scored.accuracy[0] == table.accuracy[0]
    result, again = gflkit.train("tiny", aggregator="att", mu=0.6, episode_cfg=episodes, train_cfg=steps,
                                 root=root, progress=False, return_result=True, run_dir=False)
    assert result.model.cfg.aggregator == "att" and again.accuracy[0] == table.accuracy[0]
    with pytest.raises(GFLError, match="unknown settings aggregatr"):
        gflkit.train("tiny", aggregatr="att", root=root, run_dir=False)
    with pytest.raises(GFLError, match="apply to GFL presets"):
        gflkit.train("tiny", model="knn", aggregator="att", root=root, run_dir=False)
    # Training and episode settings go by the flags' names too, each to its own config.
    flat = gflkit.train("tiny", aggregator="att", mu=0.6, k_shot=5, steps=5, eval_every=5, root=root,
                        progress=False, run_dir=False)
    assert flat.accuracy[0] == table.accuracy[0] and flat.k_shot[0] == 5
    knn = gflkit.train("tiny", model="knn", k_shot=5, steps=2, eval_every=2, root=root, progress=False, run_dir=False)
    assert knn.model[0] == "knn" and knn.k_shot[0] == 5


def test_config_on_compare_sets_episodes_but_not_the_models(root, tmp_path):
    first = tmp_path / "first"
    invoke("train", *FAST, "--model", "protonet", "--run-dir", first, "--no-eval", "--data-root", root, "tiny")
    table = csv_table(invoke("compare", "tiny", "--config", first / "config.json", "--model", "lp", "--no-majority",
                          "--data-root", root))
    assert list(table.model) == ["lp"] and table.k_shot[0] == 5
    overridden = csv_table(invoke("compare", "tiny", "--config", first / "config.json", "--model", "lp",
                                  "--k-shot", "3", "--no-majority", "--data-root", root))
    assert overridden.k_shot[0] == 3
