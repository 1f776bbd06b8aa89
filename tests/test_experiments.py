"""compare / ablate / sweep: rows parse with pandas and carry every documented column."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke
from click.testing import CliRunner
from gflkit_cli.main import cli

from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.data import SMALL_SPEC, GraphCollection, make_synthetic_family
from gflkit.episodes import EpisodeSampler
from gflkit.experiments import compare
from gflkit.evaluation.scoring import baseline_accuracies, graph_accuracies
from gflkit.models.baselines import PER_GRAPH, TRANSFER
from gflkit.refine import RefineConfig
from gflkit.training.meta import fit_transfer

RESULT = ["model", "aggregator", "dataset", "split", "n_seeds", "n_graphs", "k_shot", "episodes", "refine", "accuracy",
          "ci95", "ci_over", "std", "balanced_accuracy", "macro_f1", "seed_std"]
PAIRED = ["reference", "delta", "delta_lo", "delta_hi", "prob_improvement", "p_value", "p_adjusted", "n_pairs"]
FAST = ["--steps", "4", "--eval-every", "2", "--k-shot", "5"]
#: The paired columns, empty on a row that is its own reference.
EMPTY = ["reference", "delta", "delta_lo", "delta_hi", "prob_improvement", "p_value", "p_adjusted", "n_pairs"]
ONE_SEED = "warning: one training seed"


def _csv(*args) -> pd.DataFrame:
    return csv_table(invoke(*args), keep_default_na=False)


def _counts(column) -> list:
    """A column of counts read with keep_default_na=False: ints, and None for empty cells."""
    return [None if v == "" else int(v) for v in column]


def _is_reference(row) -> bool:
    """Whether every paired cell of a row (read with keep_default_na=False) is empty."""
    return all(row[c] == "" for c in EMPTY)


def test_ablate_drop_gate_rows(root):
    result = invoke("ablate", "tiny", "--drop", "gate", *FAST, "--data-root", root)
    df = csv_table(result, keep_default_na=False)
    assert list(df.columns) == ["variant", "description"] + RESULT + PAIRED + ["seed"]
    assert list(df.variant) == ["full", "gate"] and list(df.reference) == ["", "full"]
    assert _is_reference(df.iloc[0])  # the reference row is not paired with itself
    # three seeds by default: the units are (seed, graph) pairs
    assert set(df.seed) == {"0,1,2"} and set(df.n_seeds) == {3} and set(df.ci_over) == {"seeds x graphs"}
    assert ONE_SEED not in result.stderr
    delta = float(df.delta[1])
    # the mean paired difference is the difference of the means (same episodes, same units)
    assert delta == pytest.approx(df.accuracy[1] - df.accuracy[0], abs=1e-3)
    assert float(df.delta_lo[1]) <= delta <= float(df.delta_hi[1]) and _counts(df.n_pairs) == [None, 3 * 2]
    assert 0 <= float(df.prob_improvement[1]) <= 1
    assert df.description[1].startswith("M2a")


@pytest.mark.slow
def test_ablate_all_with_seeds(root):
    df = _csv("ablate", "tiny", "--all", "--seed", "0,1", "--episodes", "2", *FAST, "--data-root", root)
    assert len(df) == 5 and list(df.variant) == ["full", "structure", "gate", "hierarchy", "recon"]
    assert set(df.seed) == {"0,1"} and set(df.n_seeds) == {2} and (df.seed_std >= 0).all()
    # the units are (seed, graph): 2 seeds x 2 graphs, each the mean over its 2 episodes
    assert _counts(df.n_pairs) == [None, 4, 4, 4, 4]


@pytest.mark.slow
def test_sweep_mu_and_k_shot(root):
    df = _csv("sweep", "tiny", "--param", "mu", "--values", "0.5,0.9", *FAST, "--data-root", root)
    assert list(df.columns) == ["param", "value"] + RESULT + PAIRED + ["seed"]
    assert list(df.value) == [0.5, 0.9] and set(df.model) == {"gfl"}
    assert list(df.reference) == ["", "gfl@0.5"] and _is_reference(df.iloc[0])  # one model: the first value
    df = _csv("sweep", "tiny", "--param", "k-shot", "--values", "1,3", "--model", "gfl,protonet", "--seed", "0",
              "--steps", "2", "--eval-every", "2", "--data-root", root)
    assert list(df.k_shot) == [1, 1, 3, 3] and list(df.model) == ["gfl", "protonet"] * 2
    assert list(df.reference) == ["", "gfl@1", "", "gfl@3"]  # several models: the first, same value
    assert set(df.n_seeds) == {1} and set(df.ci_over) == {"graphs"}


@pytest.mark.slow
def test_compare_rows(root):
    df = _csv("compare", "tiny", "--model", "gfl,protonet,lp", *FAST, "--data-root", root)
    assert list(df.columns) == RESULT + PAIRED + ["seed"]
    assert list(zip(df.model, df.aggregator)) == [("gfl", "mean"), ("gfl", "att"), ("protonet", ""), ("lp", ""),
                                                  ("majority", "")]
    assert list(df.reference) == [""] + ["gfl-mean"] * 4 and _is_reference(df.iloc[0])
    assert float(df.delta[3]) == pytest.approx(df.accuracy[3] - df.accuracy[0], abs=1e-3)
    # three seeds by default; the accuracy and the delta intervals are over the same units
    assert set(df.n_seeds) == {3} and set(df.n_graphs) == {2} and set(df.ci_over) == {"seeds x graphs"}
    assert _counts(df.n_pairs) == [None] + [6] * 4


def test_compare_refine_seeds_and_reference(root):
    df = _csv("compare", "tiny", "--model", "protonet,transfer-head,lp", "--refine", "none,lp,cs",
              "--seed", "0,1", "--reference", "lp", "--no-majority", "--ci", "paper", *FAST, "--data-root", root)
    assert list(zip(df.model, df.refine)) == [("protonet", "none"), ("protonet", "lp"), ("protonet", "cs"),
                                              ("transfer-head", "none"), ("transfer-head", "lp"),
                                              ("transfer-head", "cs"), ("lp", "none")]
    # lp is never refined: every row is paired with its one row
    assert list(df.reference) == ["lp"] * 6 + [""] and set(df.seed) == {"0,1"}
    assert _is_reference(df.iloc[-1]) and (df.seed_std >= 0).all()
    # paper: over graphs, seeds averaged
    assert set(df.ci_over) == {"graphs"} and _counts(df.n_pairs) == [2] * 6 + [None]
    by_refine = _csv("compare", "tiny", "--model", "protonet,lp", "--refine", "none,cs", "--reference", "+none",
                     *FAST, "--data-root", root)
    assert list(by_refine.reference) == ["", "protonet", "", ""]
    assert float(by_refine.delta[1]) == pytest.approx(by_refine.accuracy[1] - by_refine.accuracy[0], abs=1e-3)
    assert all(_is_reference(by_refine.iloc[i]) for i in (0, 2, 3))


@pytest.mark.slow
def test_refined_rows_are_paired_under_the_same_refinement(root):
    args = ["compare", "tiny", "--model", "gfl,protonet", "--aggregator", "mean", "--refine", "none,lp",
            "--no-majority", "--seed", "0,1", *FAST, "--data-root", root]
    df = _csv(*args, "--reference", "protonet")
    labels = ["gfl-mean", "gfl-mean+lp", "protonet", "protonet+lp"]
    assert list(zip(df.model, df.refine)) == [("gfl", "none"), ("gfl", "lp"), ("protonet", "none"),
                                              ("protonet", "lp")]
    assert list(df.reference) == ["protonet", "protonet+lp", "", ""]
    for row, ref in ((0, 2), (1, 3)):  # the delta is against the reference model under the row's refinement
        assert float(df.delta[row]) == pytest.approx(df.accuracy[row] - df.accuracy[ref], abs=1e-3)
    fixed = _csv(*args, "--reference", "protonet+none")  # one row for every row: the former behaviour
    assert list(fixed.reference) == ["protonet", "protonet", "", "protonet"]
    assert float(fixed.delta[1]) == pytest.approx(fixed.accuracy[1] - fixed.accuracy[2], abs=1e-3)
    one = _csv(*args, "--reference", "protonet+lp")
    assert list(one.reference) == ["protonet+lp"] * 3 + [""] and labels[3] == "protonet+lp"
    # JSON: the reference rows' paired cells are null
    rows = json.loads(invoke(*args, "--reference", "protonet", "--format", "json").stdout)
    assert all(rows[2][c] is None for c in EMPTY) and rows[1]["reference"] == "protonet+lp"


def test_compare_scores_predicts_candidates_as_rows_paired_on_the_same_episodes(root):
    args = ["compare", "tiny", "--model", "protonet,centroid,centroid-sgc,ridge,ridge-sgc", "--seed", "0,1",
            "--episodes", "2", *FAST, "--data-root", root]
    df = _csv(*args)
    assert list(df.columns) == RESULT + PAIRED + ["seed"]
    assert list(df.model) == ["protonet", "centroid", "centroid-sgc", "ridge", "ridge-sgc", "majority"]
    assert list(df.reference) == [""] + ["protonet"] * 5 and _is_reference(df.iloc[0])
    for row in range(1, 5):  # paired with protonet over the same (seed, graph) units
        assert float(df.delta[row]) == pytest.approx(df.accuracy[row] - df.accuracy[0], abs=1e-3)
        assert float(df.delta_lo[row]) <= float(df.delta[row]) <= float(df.delta_hi[row])
    assert _counts(df.n_pairs) == [None] + [2 * 2] * 5 and set(df.refine) == {"none"}
    assert (df.accuracy[1:5] > df.accuracy[5]).all()  # above the majority class
    named = _csv("compare", "tiny", "--model", "ridge-sgc,centroid", "--seed", "0,1", "--episodes", "2",
                 "--reference", "centroid", "--k-shot", "5", "--data-root", root)
    assert list(named.reference) == ["centroid", "", "centroid"]
    assert named.accuracy[0] == df.accuracy[4] and named.accuracy[1] == df.accuracy[1]


def test_compare_takes_aggregator_lists_and_gfl_att(root):
    both = _csv("compare", "tiny", "--model", "gfl", "--aggregator", "att,mean", "--no-majority", "--seed", "0",
                *FAST, "--data-root", root)
    assert list(both.aggregator) == ["att", "mean"] and list(both.reference) == ["", "gfl-att"]
    named = _csv("compare", "tiny", "--model", "gfl-att,protonet", "--no-majority", "--seed", "0", "--reference",
                 "gfl-att", *FAST, "--data-root", root)
    assert list(zip(named.model, named.aggregator)) == [("gfl", "att"), ("protonet", "")]
    assert list(named.reference) == ["", "gfl-att"]
    assert named.accuracy[0] == both.accuracy[0]  # the same run as the att row above
    bad = invoke("compare", "tiny", "--aggregator", "mean,sum", "--data-root", root)
    assert bad.exit_code == 2 and "--aggregator" in bad.stderr and "'sum'" in bad.stderr


def test_one_seed_compare_warns_once_and_says_what_the_interval_covers(root):
    result = invoke("compare", "tiny", "--model", "lp", "--seed", "0", "--k-shot", "5", "--episodes", "2",
                    "--data-root", root)
    df = csv_table(result, keep_default_na=False)
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and warned[0].startswith(ONE_SEED), result.stderr
    assert "--seed 0,1,2" in warned[0] and "training randomness" in warned[0]
    assert set(df.n_seeds) == {1} and set(df.ci_over) == {"graphs"} and set(df.seed_std) == {""}
    assert _counts(df.n_pairs) == [None, 2]  # the majority row against lp (the first), over the 2 graphs
    three = invoke("compare", "tiny", "--model", "lp", "--k-shot", "5", "--data-root", root)
    assert ONE_SEED not in three.stderr
    table = csv_table(three)
    assert (set(table.n_seeds), set(table.n_graphs), set(table.ci_over)) == ({3}, {2}, {"seeds x graphs"})


def test_bad_experiment_options_exit_cleanly(root):
    runner = CliRunner()
    result = runner.invoke(cli, ["ablate", "tiny", "--data-root", str(root)])
    assert result.exit_code == 2 and "--drop" in result.output
    result = runner.invoke(cli, ["sweep", "tiny", "--param", "mu", "--values", "high", "--data-root", str(root)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    result = runner.invoke(cli, ["compare", "tiny", "--seed", "0,1,0", "--data-root", str(root)])
    assert result.exit_code == 2 and "--seed" in result.stderr and "once" in result.stderr
    result = runner.invoke(cli, ["compare", "tiny", "--model", "nope", "--data-root", str(root)])
    assert result.exit_code == 1 and "unknown models" in result.output
    result = runner.invoke(cli, ["compare", "tiny", "--model", "lp", "--reference", "gfl", "--data-root", str(root)])
    assert result.exit_code == 1 and "--reference 'gfl'" in result.output and "Traceback" not in result.output
    result = runner.invoke(cli, ["compare", "tiny", "--model", "lp", "--refine", "none,xx", "--data-root", str(root)])
    assert result.exit_code == 2 and "--refine" in result.output


@pytest.mark.slow
def test_transfer_baselines_beat_non_transfer_gcn(small_family):
    """On the small seeded family, learning from the train graphs pays off over a
    GCN trained on each test graph's support set alone (same episodes)."""
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(), seed=0)
    gcn = np.mean(list(baseline_accuracies(PER_GRAPH["gcn"], sampler).values()))
    # not the linear probes on a frozen encoder: after 100 steps here they do not beat the GCN (GRACE 56.2%,
    # supervised 58.2% against 58.9%; on Facebook they trail Protonet too, docs/tables.md); their own
    # tests hold them to beating chance by a wide margin
    for name in (n for n in TRANSFER if not n.startswith("tlp")):
        result = fit_transfer(name, small_family, EpisodeConfig(), TrainConfig(steps=100, eval_every=25),
                              progress=False)
        acc = np.mean(list(graph_accuracies(result.model, sampler).values()))
        assert acc > gcn + 0.01, f"{name}: {acc:.3f} vs non-transfer GCN {gcn:.3f}"


def _no_signal_family(seed: int = 3) -> GraphCollection:
    """The small family with every label redrawn at random (class 0 twice as likely as the others)."""
    family = make_synthetic_family(SMALL_SPEC, seed=seed, name="noise")
    rng = np.random.default_rng(seed)
    p = np.array([2.0] + [1.0] * (family.num_classes - 1))
    for g in family.graphs:
        label = g.ndata["label"]
        labelled = label >= 0
        drawn = rng.choice(family.num_classes, size=int(labelled.sum()), p=p / p.sum())
        label[labelled] = torch.from_numpy(drawn).to(label.dtype)
    return GraphCollection(family.graphs, family.splits, family.classes, name="noise", source="synthetic")


@pytest.mark.slow
def test_no_model_beats_majority_without_label_signal():
    """On random labels no model is reported above the majority row with a paired interval excluding 0."""
    df = compare(_no_signal_family(), ["gfl", "protonet", "transfer-head", "lp"], aggregators=("mean",),
                 episode_cfg=EpisodeConfig(k_shot=5), train_cfg=TrainConfig(steps=30, eval_every=10), episodes=3,
                 refines=(RefineConfig(), RefineConfig("cs")), reference="majority", progress=False)
    majority = df[df.model == "majority"].iloc[0]
    assert majority.accuracy > 100 / 4 + 5  # the majority rate exceeds chance: the row has something to beat
    models = df[df.model != "majority"]
    assert len(models) == 7 and (models.n_pairs == 3 * 8).all()  # three seeds by default, 8 test graphs
    assert not (models.delta_lo > 0).any(), models[["model", "refine", "delta", "delta_lo", "delta_hi"]]
    paired = ["delta", "delta_lo", "delta_hi", "prob_improvement", "p_value", "p_adjusted", "n_pairs"]
    assert majority.isna()[paired].all()


def test_train_and_evaluate_with_refinement_and_paper_interval(root, tmp_path):
    run = tmp_path / "run"
    df = _csv("train", "tiny", "--model", "protonet", *FAST, "--run-dir", run, "--refine", "cs", "--ci", "paper",
              "--data-root", root)
    assert (df.refine[0], df.ci_over[0]) == ("cs", "graphs")
    # the paper's interval over 2 graphs is 1.96 * std(ddof=0) / sqrt(2)
    assert df.ci95[0] == pytest.approx(1.96 * df["std"][0] / np.sqrt(2), abs=2e-4)
    plain = _csv("evaluate", run, "tiny", "--episodes", "3", "--data-root", root)
    refined = _csv("evaluate", run, "tiny", "--episodes", "3", "--refine", "lp", "--refine-steps", "5",
                   "--data-root", root)
    assert (plain.refine[0], refined.refine[0]) == ("none", "lp") and plain.ci95[0] > 0
    assert (plain.n_seeds[0], plain.ci_over[0]) == (1, "graphs")
    # one trained run: the interval leaves training randomness out, and evaluate says so, once
    warned = [line for line in invoke("evaluate", run, "tiny", "--data-root", root).stderr.splitlines()
              if line.startswith("warning:")]
    assert len(warned) == 1 and warned[0].startswith(ONE_SEED) and "gflkit compare --seed 0,1,2" in warned[0]
    result = CliRunner().invoke(cli, ["evaluate", "lp", "tiny", "--refine", "lp", "--data-root", str(root)])
    assert result.exit_code == 2 and "--refine applies to trained runs" in result.output


def test_one_test_graph_gives_an_interval_over_episodes(tmp_path):
    sample = Path(__file__).resolve().parents[1] / "data" / "samples" / "tables"
    result = CliRunner().invoke(cli, ["preprocess", "tables", str(sample), "--graph-col", "graph", "--feature-cols",
                                      "f0,f1,f2", "--graphs", "4,1,1", "--out-dir", str(tmp_path / "one")])
    assert result.exit_code == 0, result.output
    args = ["compare", tmp_path / "one", "--model", "protonet,lp", "--k-shot", "2", "--episodes", "6", "--steps",
            "2", "--eval-every", "2"]
    df = _csv(*args, "--seed", "0")
    assert set(df.n_graphs) == {1} and set(df.ci_over) == {"episodes"}
    assert (df.ci95[:2] > 0).all() and _counts(df.n_pairs) == [None, 6, 6]
    # every episode leaves the same number of queries per class: the majority rate does not vary
    assert df.ci95[2] == 0
    seeds = _csv(*args)  # three seeds on one graph: the interval is over the seeds
    assert set(seeds.ci_over) == {"seeds"} and set(seeds.n_seeds) == {3} and _counts(seeds.n_pairs) == [None, 3, 3]
    result = invoke(*args)
    assert "warning: one test graph of tables: the intervals cover training randomness and support draws on this " \
           "graph only" in result.stderr


def test_p_values_are_adjusted_over_the_table(root):
    from gflkit.evaluation.statistics import adjust_p

    args = ["ablate", "tiny", "--all", "--seed", "0,1", "--episodes", "2", *FAST, "--data-root", root]
    holm, bh, none = (csv_table(invoke(*args, "--adjust", a)) for a in ("holm", "bh", "none"))
    for table, method in ((holm, "holm"), (bh, "bh")):
        # p-values are printed to 3 digits
        np.testing.assert_allclose(table.p_adjusted[1:], adjust_p(table.p_value[1:], method), rtol=5e-3)
        assert (table.p_adjusted[1:] >= table.p_value[1:]).all() and table.p_adjusted.isna()[0]
    assert none.p_adjusted[1:].tolist() == none.p_value[1:].tolist()
    assert invoke("ablate", "tiny", "--adjust", "bonferroni", "--data-root", root).exit_code == 2


def test_rerun_into_the_same_runs_root_needs_force(small_family_dir, tmp_path):
    from click.testing import CliRunner
    from gflkit_cli.main import cli

    args = ["compare", str(small_family_dir), "--model", "protonet", "--steps", "3", "--eval-every", "3",
            "--no-majority", "--runs-root", str(tmp_path / "runs")]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(cli, args)
    errors = [line for line in again.stderr.splitlines() if line.startswith("Error")]
    assert again.exit_code == 1 and len(errors) == 1 and "--force" in errors[0] and again.stdout == ""
    forced = CliRunner().invoke(cli, args + ["--force"])
    assert forced.exit_code == 0, forced.output
    assert forced.stdout == first.stdout  # the same seeded run, replaced


def _rows(majority: float, *others: float) -> list[dict]:
    rows = [{"model": "gfl", "aggregator": "mean", "refine": "none", "accuracy": a} for a in others]
    return rows + [{"model": "majority", "aggregator": None, "refine": "none", "accuracy": majority}]


def test_a_table_where_no_model_beats_the_majority_row_warns_once():
    from gflkit.errors import NoSignalWarning
    from gflkit.experiments import warn_no_signal

    with pytest.warns(NoSignalWarning, match=r"no model beats the majority class on twitch: the best, gfl-mean, "
                                             r"scores 40\.00 against 41\.00") as caught:
        warn_no_signal(_rows(41.0, 40.0, 39.0), "twitch")
    assert len(caught) == 1
    with pytest.warns(NoSignalWarning):  # a tie is no improvement
        warn_no_signal(_rows(41.0, 41.0), "twitch")


def test_no_warning_when_a_model_beats_the_majority_row_or_there_is_none():
    import warnings

    from gflkit.experiments import warn_no_signal

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_no_signal(_rows(41.0, 40.0, 41.5), "cora")
        warn_no_signal([{"model": "gfl", "accuracy": 10.0}], "cora")


@pytest.mark.parametrize("command", [
    ["compare", "--model", "protonet,lp", "--refine", "none,lp", "--seed", "0,1"],
    ["ablate", "--drop", "gate", "--seed", "0,1", "--episodes", "2"],
    ["sweep", "--param", "k-shot", "--values", "2,3", "--model", "gfl,protonet", "--seed", "1"],
])
def test_summarize_prints_the_table_again_from_its_records(root, tmp_path, command):
    records = tmp_path / "records.csv"
    printed = invoke(command[0], "tiny", *command[1:], "--steps", "2", "--eval-every", "2", "--k-shot", "2",
                     "--data-root", root, "--records", records)
    assert printed.exit_code == 0, printed.output
    again = invoke("summarize", records)
    assert again.exit_code == 0, again.output
    assert again.stdout == printed.stdout
    stored = pd.read_csv(records, keep_default_na=False)
    assert {"row", "reference", "seed", "graph_id", "episode", "accuracy"} <= set(stored.columns)
    table = csv_table(printed)
    assert stored.groupby("row", sort=False).ngroups == len(table)
    # another adjustment of the same records changes p_adjusted alone
    unadjusted = csv_table(invoke("summarize", records, "--adjust", "none"))
    assert unadjusted.drop(columns="p_adjusted").equals(table.drop(columns="p_adjusted"))
    assert unadjusted.p_adjusted.equals(unadjusted.p_value.rename("p_adjusted"))


def test_summarize_pairs_every_row_with_another_reference(root, tmp_path):
    records = tmp_path / "records.csv"
    printed = invoke("compare", "tiny", "--model", "protonet,lp,gcn", "--seed", "0,1", "--steps", "2",
                     "--eval-every", "2", "--k-shot", "2", "--data-root", root, "--records", records)
    assert printed.exit_code == 0, printed.output
    first = csv_table(printed)
    against = csv_table(invoke("summarize", records, "--reference", "lp"))
    assert against.accuracy.equals(first.accuracy)  # the rows themselves do not move
    lp = against.model == "lp"
    assert against[lp].delta.isna().all() and (against[~lp].reference == "lp").all()
    by = dict(zip(against.model, against.delta))
    assert by["protonet"] == pytest.approx(by_model(first, "protonet") - by_model(first, "lp"))
    assert by["gcn"] == pytest.approx(by_model(first, "gcn") - by_model(first, "lp"))
    wrong = invoke("summarize", records, "--reference", "nothing")
    assert wrong.exit_code == 1 and "reference 'nothing' is no row of the records" in wrong.output


def test_summarize_joins_the_records_of_runs_on_the_same_episodes(root, tmp_path):
    common = ["--seed", "0,1", "--steps", "2", "--eval-every", "2", "--k-shot", "2", "--no-majority",
              "--data-root", root]
    whole, first, later = (tmp_path / f"{name}.csv" for name in ("whole", "first", "later"))
    at_once = invoke("compare", "tiny", "--model", "protonet,lp,gcn", *common, "--records", whole)
    assert invoke("compare", "tiny", "--model", "protonet,lp", *common, "--records", first).exit_code == 0
    assert invoke("compare", "tiny", "--model", "protonet,gcn", *common, "--records", later).exit_code == 0
    joined_records = tmp_path / "joined.csv"
    joined = invoke("summarize", first, later, "--records", joined_records)  # protonet, in both: the later's
    assert joined.exit_code == 0, joined.output
    assert joined.stdout == at_once.stdout
    assert invoke("summarize", joined_records).stdout == at_once.stdout
    # a row rerun replaces its records in place, and --reference is written into the records
    rerun, paired_with_lp = tmp_path / "rerun.csv", tmp_path / "paired.csv"
    assert invoke("compare", "tiny", "--model", "lp", *common, "--records", rerun).exit_code == 0
    against_lp = invoke("summarize", joined_records, rerun, "--reference", "lp", "--records", paired_with_lp)
    assert list(csv_table(against_lp).model) == ["protonet", "lp", "gcn"]
    assert invoke("summarize", paired_with_lp).stdout == against_lp.stdout
    other = tmp_path / "other.csv"
    assert invoke("compare", "tiny", "--model", "lp", *common[:-3], "--k-shot", "3", "--no-majority",
                  "--data-root", root, "--records", other).exit_code == 0
    wrong = invoke("summarize", first, other)
    assert wrong.exit_code == 1 and f"{other}: k_shot 3 where {first} has 2" in wrong.output


def by_model(table: pd.DataFrame, model: str) -> float:
    return float(table.set_index("model").accuracy[model])


def test_summarize_names_what_is_wrong_with_the_records(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,accuracy\ngfl,0.5\n")
    result = invoke("summarize", bad)
    assert result.exit_code == 1 and "records without the column(s) row, reference" in result.output


# -- the shape of the calls: a few named parameters, the settings checked in one place ---------------------------

@pytest.mark.parametrize("name", ["compare", "ablate", "sweep"])
def test_table_functions_take_at_most_eight_named_parameters(name):
    import inspect

    from gflkit import experiments

    params = inspect.signature(getattr(experiments, name)).parameters.values()
    named = [p.name for p in params if p.kind is not p.VAR_KEYWORD]
    assert len(named) <= 8 and "table" in named, named
    assert [p.kind for p in params][-1] is inspect.Parameter.VAR_KEYWORD


@pytest.mark.parametrize("call, needle", [
    (lambda: compare(None, ["lp"], seed=3), "compare() got unknown settings seed"),
    (lambda: compare(None, ["lp"], jobs=0), "`jobs=0`"),
    (lambda: compare(None, ["lp"], ci="normal"), "`ci='normal'`"),
    (lambda: compare(None, ["lp"], adjust="bonferroni"), "`adjust='bonferroni'`"),
    (lambda: compare(None, ["lp"], seeds=(0, 0)), "repeat a seed"),
    (lambda: __import__("gflkit.experiments").experiments.ablate(None, majority=False), "ablate() got unknown"),
    (lambda: __import__("gflkit.experiments").experiments.sweep(None, refines=()), "sweep() got unknown"),
])
def test_bad_table_settings_are_refused_before_any_work(call, needle):
    from gflkit.errors import GFLError

    with pytest.raises(GFLError) as err:
        call()  # data=None would be the built-in family: the settings fail first, so nothing is read
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_table_settings_and_keywords_give_the_same_table(root):
    from gflkit.experiments import TableSettings

    common = dict(episode_cfg=EpisodeConfig(k_shot=5))
    by_keywords = compare("tiny", ["lp", "knn"], seeds=(0, 1), episodes=2, root=root, progress=False,
                          majority=False, **common)
    table = TableSettings(seeds=(0, 1), episodes=1, root=root, progress=False)
    by_object = compare("tiny", ["lp", "knn"], table=table, episodes=2, majority=False, **common)
    pd.testing.assert_frame_equal(by_object, by_keywords)
    assert list(by_object["model"]) == ["lp", "knn"] and set(by_object["seed"]) == {"0,1"}
    assert table.episodes == 1  # the keyword applies over the object, which stays as it was
