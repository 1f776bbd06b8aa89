"""predict's candidates, its choice and its estimate on graphs with known labels: bias, coverage and regret.

For each graph and number of labels per class (``--shots``), ``--draws`` label
sets are drawn (seeded by family, shots and draw). For each draw every
candidate (:mod:`gflkit.prediction.candidates`) is cross-validated on the
labels exactly as ``gflkit predict`` does, then fitted on all of them and
scored on every other labelled node of the graph (accuracy and balanced
accuracy). Then each selection rule (tolerances 0 = the plain maximum, 0.5
and 1 standard error, and ``auto``, the library's rule: 1 standard error or a
margin that is large when the labels per class are few) picks a candidate;
its regret is the oracle's (the candidate best on the other nodes) true
accuracy minus the picked one's. With one label per class there is no estimate and ``auto``
takes the default candidate.

Graphs: the real ones in the shared data folder (Cora, Citeseer, Facebook
pages, Wikipedia chameleon and squirrel, features reduced to 128 dimensions by
the same truncated SVD ``preprocess`` fits, chameleon and squirrel traffic in 5
quantile classes) and the test graphs of the small synthetic family (``synthetic``,
seed 0), where a GFL run trained on the family's train graphs (``--steps``) adds
the run's candidates (``model``, ``model+lp``, ``model+cs``); ``synthetic-default``:
the same with the default family (``gflkit preprocess synthetic``, seed 0: 20 test
graphs of 3000-6000 nodes, 128 features) and a GFL run trained with training's
defaults (``--default-steps`` to change). ``karate``: Zachary's karate club (no
features; the two clubs).

    OMP_NUM_THREADS=1 python scripts/predict_candidates.py --out results/predict

(``--seed 1`` draws other label sets: a check of the rule on draws it was
not chosen on.) ``--show`` prints auto against the run's model from
``OUT/records.csv`` and writes nothing (the tutorial's generated table);
``--print candidates|rules|estimate`` prints that table from ``OUT``'s stored
``summary.csv``, ``rules.csv`` or ``estimate.csv`` and writes nothing. It
writes ``records.csv`` (one row per graph, shots, draw and candidate),
``summary.csv`` (per family and shots: each candidate's mean true accuracy,
each rule's, the oracle's, the rules' regret and wrong-pick rate) and
``against_the_run.csv`` (auto minus the run's model, paired over graphs and
draws, where there is a run), ``estimate.csv`` (per family and shots: the chosen candidate's estimate
against its true accuracy and balanced accuracy: bias, mean absolute error and
coverage of the 95% interval), and ``table.md`` generated from them.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import gflkit  # noqa: F401  (before dgl)
import dgl  # noqa: E402

from gflkit.prediction.candidates import RunModel  # noqa: E402
from gflkit.prediction.diagnostics import cross_validate  # noqa: E402
from gflkit.prediction.predictor import candidate_graph, fitted_candidates, simple_graph  # noqa: E402
from gflkit.prediction.selection import ORDER, Contender, choose, margin  # noqa: E402
from gflkit.refine import RefineConfig  # noqa: E402

#: Rules of standard errors alone (no margin), measured beside ``auto`` (the library's rule).
RULES = {"argmax": 0.0, "half_se": 0.5, "one_se": 1.0}
#: Every rule of the tables: those of :data:`RULES`, each with the earlier order, and ``auto``.
ALL_RULES = [*RULES, *(f"{r}_lp_first" for r in RULES), "auto"]
#: An earlier order of preference, measured beside the library's (:data:`gflkit.prediction.selection.ORDER`).
EDGES_FIRST = ("model", "model+lp", "lp", "centroid-sgc", "ridge-sgc", "cs", "model+cs", "centroid", "ridge")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def real_graphs(data: Path) -> dict[str, dgl.DGLGraph]:
    """The shared real graphs with labels, features reduced to 128 dimensions."""
    from gflkit.data.sources.planetoid import read_planetoid
    from gflkit.data.sources.tables import TableColumns, read_table_graph

    out = {}
    for name in ("cora", "citeseer"):
        out[name] = _reduced(read_planetoid(data / "planetoid", name).g)
    fb = data / "facebook_pages"
    out["facebook"] = read_table_graph(fb / "edges/facebook_edges.csv", fb / "target/facebook_target.csv",
                                       features=fb / "features/facebook.json",
                                       columns=TableColumns(src="id_1", dst="id_2", label="page_type"),
                                       feat_size=128).g
    for name in ("chameleon", "squirrel"):
        w = data / "wikipedia"
        out[name] = read_table_graph(w / f"{name}_edges.csv", w / f"{name}_target.csv",
                                     features=w / f"{name}_features.json",
                                     columns=TableColumns(src="id1", dst="id2", label="target", label_quantiles=5),
                                     feat_size=128).g
    return out


def _reduced(g: dgl.DGLGraph, dims: int = 128) -> dgl.DGLGraph:
    from gflkit.data.sources.table_io import fit_svd

    feat = g.ndata["feat"].numpy()
    if feat.shape[1] > dims:
        g.ndata["feat"] = torch.from_numpy(np.asarray(fit_svd(feat, dims, 0).apply(feat, "features"))).float()
    return g


def karate() -> dgl.DGLGraph:
    """Zachary's karate club: no features, the two clubs as labels."""
    import networkx as nx

    k = nx.karate_club_graph()
    e = np.array(k.edges())
    g = dgl.graph((torch.from_numpy(e[:, 0]), torch.from_numpy(e[:, 1])), num_nodes=k.number_of_nodes())
    g.ndata["label"] = torch.tensor([int(k.nodes[i]["club"] == "Officer") for i in range(len(k))])
    g.ndata["feat"] = torch.zeros(len(k), 0)
    return g


def synthetic(steps: int | None, seed: int = 0, size: str = "small"):
    """The test graphs of the small (``size="small"``) or the default synthetic family (``"default"``, as
    ``gflkit preprocess synthetic`` builds it) and a GFL run trained on its train graphs (``steps``;
    ``None``: training's default, as ``gflkit train``)."""
    from gflkit.data import SMALL_SPEC, SyntheticSpec, make_synthetic_family

    spec = replace(SMALL_SPEC) if size == "small" else SyntheticSpec()
    family = make_synthetic_family(spec, seed=seed, name=size, progress=False)
    cfg = gflkit.TrainConfig(seed=seed) if steps is None else gflkit.TrainConfig(steps=steps, seed=seed)
    result, _ = gflkit.train(family, train_cfg=cfg, run_dir=False, eval_split=None, progress=False,
                             return_result=True)
    _log(f"trained {int(result.history['step'].max())} steps; weights of step {result.best_step}, "
         f"validation accuracy {100 * result.best_val:.1f}%")
    module = result.model.eval()
    graphs = [g for g, s in zip(family.graphs, family.splits) if s == "test"]
    return graphs, module


def draw_labels(label: np.ndarray, shots: int, rng):
    """``shots`` labelled nodes of every class with more than ``shots`` nodes (ids, classes), or ``None``."""
    classes = [c for c in np.unique(label) if c >= 0 and (label == c).sum() > shots]
    if len(classes) < 2:
        return None
    return [torch.from_numpy(rng.choice(np.flatnonzero(label == c), shots, replace=False)) for c in classes], classes


def one_graph(family: str, g: dgl.DGLGraph, gid: int, shots: int, draws: int, module=None,
              seed: int = 0) -> list[dict]:
    """The records of ``draws`` label sets of ``shots`` per class on one graph."""
    label = g.ndata["label"].numpy()
    h, _ = candidate_graph(g, family)
    found = [Contender(c, h, family) for c in fitted_candidates()]
    if module is not None:
        from gflkit.graphs import prepare_graph

        m = simple_graph(g)
        m.ndata["feat"] = g.ndata["feat"]
        prepared = prepare_graph(m)
        plain = RunModel(module)
        found += [Contender(plain, prepared, family)] + [
            Contender(RunModel(module, RefineConfig(r), share=plain), prepared, family) for r in ("lp", "cs")]
    rows = []
    for d in range(draws):
        rng = np.random.default_rng([seed, shots, d, gid, sum(map(ord, family))])
        drawn = draw_labels(label, shots, rng)
        if drawn is None:
            continue
        ids, classes = drawn
        names = [str(c) for c in classes]
        est = cross_validate({c.name: (lambda rest, c=c: c.probabilities(rest).argmax(1)) for c in found}, names,
                             ids, seed=d)
        other = np.isin(label, classes)
        other[torch.cat(ids).numpy()] = False
        code = {c: i for i, c in enumerate(classes)}
        truth = np.array([code.get(v, -1) for v in label[other]])
        true_acc, true_bacc = {}, {}
        for c in found:
            pred = c.probabilities(ids).argmax(1).numpy()[other]
            true_acc[c.name] = float((pred == truth).mean())
            true_bacc[c.name] = float(np.mean([(pred[truth == k] == k).mean() for k in range(len(classes))]))
        oracle = max(true_acc, key=true_acc.get)
        available = [c.name for c in found]
        picks = {rule: choose(est, available, tol, margin_of=None)[0] for rule, tol in RULES.items()}
        picks.update({f"{rule}_lp_first": choose(est, available, tol, EDGES_FIRST, margin_of=None)[0]
                      for rule, tol in RULES.items()})
        picks["auto"] = choose(est, available)[0]
        for c in found:
            e = est[c.name]
            rows.append({"family": family, "graph": gid, "shots": shots, "draw": d, "candidate": c.name,
                         "true_accuracy": true_acc[c.name], "true_balanced": true_bacc[c.name],
                         "estimate": e.accuracy, "estimate_balanced": e.balanced_accuracy,
                         "low": e.interval[0] if e.interval else None, "high": e.interval[1] if e.interval else None,
                         "oracle": c.name == oracle, **{f"pick_{r}": c.name == p for r, p in picks.items()}})
    return rows


def with_auto(records: pd.DataFrame, margin_of=margin, column: str = "pick_auto") -> pd.DataFrame:
    """``records`` with ``pick_auto`` (the library's rule), computed from the stored estimates where the records
    predate it: the first candidate in :data:`ORDER` among the one-standard-error rule's pick and the earlier
    candidates whose balanced estimate is within :func:`~gflkit.prediction.selection.margin` of the best
    (every candidate before that pick is more than a standard error behind the best, so this is the library's
    rule exactly). Without estimates (one label per class) it is the one-standard-error pick. ``margin_of``
    and ``column``: another margin (labels per class -> balanced accuracy) and where its picks go."""
    if column in records.columns:
        return records
    records = records.copy()
    records[column] = records["pick_one_se"].astype(bool)
    if "estimate_balanced" not in records.columns:
        return records
    rank = {n: i for i, n in enumerate(ORDER)}
    for _, r in records.groupby(["family", "graph", "shots", "draw"], sort=False):
        est = r["estimate_balanced"]
        if est.isna().all():
            continue
        base = r.loc[r["pick_one_se"].astype(bool), "candidate"].iloc[0]
        room = round(margin_of(int(r["shots"].iloc[0])), 4)
        near = r[(est.max() - est).round(4) <= room]["candidate"].tolist()
        chosen = min([base, *near], key=lambda n: rank.get(n, len(ORDER)))
        records.loc[r.index, column] = (r["candidate"] == chosen).to_numpy()
    return records


def summarise(records: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per family and shots: the candidates, rules and oracle (``summary``); the estimate's error (``estimate``)."""
    keys = ["family", "shots"]
    units = ["family", "graph", "shots", "draw"]
    cand = records.pivot_table(index=keys, columns="candidate", values="true_accuracy", aggfunc="mean")
    cand = cand[[c for c in ORDER if c in cand.columns]]
    per_unit = records.groupby(units)
    oracle = per_unit["true_accuracy"].max().rename("oracle")
    parts = [oracle]
    for rule in ALL_RULES:
        picked = records[records[f"pick_{rule}"]].set_index(units)["true_accuracy"].rename(rule)
        parts += [picked, (oracle - picked).rename(f"regret_{rule}"),
                  ((oracle - picked) > 0).astype(float).rename(f"wrong_{rule}")]
    unit = pd.concat(parts, axis=1).reset_index()
    summary = cand.join(unit.groupby(keys)[[p.name for p in parts]].mean()).reset_index()
    summary.insert(2, "units", unit.groupby(keys).size().to_numpy())
    chosen = records[records["pick_auto"] & records["estimate"].notna()].copy()
    chosen["err"] = chosen["estimate"] - chosen["true_accuracy"]
    chosen["err_balanced"] = chosen["estimate_balanced"] - chosen["true_balanced"]
    chosen["covered"] = (chosen["low"] <= chosen["true_accuracy"]) & (chosen["true_accuracy"] <= chosen["high"])
    chosen["covered_balanced"] = ((chosen["low"] <= chosen["true_balanced"])
                                  & (chosen["true_balanced"] <= chosen["high"]))
    every = records[records["estimate"].notna()].copy()
    every["err_balanced"] = every["estimate_balanced"] - every["true_balanced"]
    every["covered_any"] = (every["low"] <= every["true_accuracy"]) & (every["true_accuracy"] <= every["high"])
    estimate = chosen.groupby(keys).agg(units=("err", "size"), bias=("err", "mean"),
                                        mae=("err", lambda x: x.abs().mean()), coverage=("covered", "mean"),
                                        bias_balanced=("err_balanced", "mean"),
                                        mae_balanced=("err_balanced", lambda x: x.abs().mean()),
                                        coverage_balanced=("covered_balanced", "mean"))
    estimate = estimate.join(every.groupby(keys)["err_balanced"].mean().rename("bias_balanced_any_candidate"))
    estimate = estimate.join(every.groupby(keys)["covered_any"].mean().rename("coverage_any_candidate"))
    return summary, estimate.reset_index()


def rule_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Each rule's regret and wrong-pick rate, averaged over every family and shots (shots >= 3: with fewer
    labels there is no estimate and every rule takes the default candidate)."""
    rows = []
    some = summary[summary["shots"] >= 3]
    for rule in ALL_RULES:
        regret = some[f"regret_{rule}"]
        rows.append({"rule": rule, "regret": regret.mean(), "worst_regret": regret.max(),
                     "wrong": some[f"wrong_{rule}"].mean(), "accuracy": some[rule].mean()})
    return pd.DataFrame(rows)


def against_the_run(records: pd.DataFrame) -> pd.DataFrame:
    """Where there is a run: auto's accuracy minus the run's model's, paired over (graph, draw), with a 95%
    t interval."""
    from scipy import stats

    units = ["family", "graph", "shots", "draw"]
    model = records[records["candidate"] == "model"].set_index(units)["true_accuracy"]
    if model.empty:
        return pd.DataFrame(columns=["family", "shots", "units", "delta", "low", "high"])
    picked = records[records["pick_auto"]].set_index(units)["true_accuracy"]
    diff = (picked.loc[model.index] - model).rename("d").reset_index()
    rows = []
    for (family, shots), d in diff.groupby(["family", "shots"])["d"]:
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.nan
        rows.append({"family": family, "shots": shots, "units": len(d), "delta": d.mean(), "low": d.mean() - half,
                     "high": d.mean() + half})
    return pd.DataFrame(rows)


def candidates_markdown(summary: pd.DataFrame) -> str:
    """Each candidate's, auto's and the oracle's mean accuracy, and auto's regret, per family and shots."""
    cands = [c for c in ORDER if c in summary.columns]
    head = ["family", "shots", *cands, "auto", "oracle", "auto's regret"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in summary.iterrows():
        cells = [r["family"], str(r["shots"])] + [("" if pd.isna(r[c]) else f"{100 * r[c]:.1f}") for c in cands]
        cells += [f"{100 * r['auto']:.1f}", f"{100 * r['oracle']:.1f}", f"{100 * r['regret_auto']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def rules_markdown(rules: pd.DataFrame) -> str:
    """Each rule's mean accuracy, mean and worst regret and wrong-pick rate."""
    lines = ["| rule | mean accuracy | mean regret | worst cell's regret | picks worse than the oracle |",
             "|---|---|---|---|---|"]
    for _, r in rules.iterrows():
        lines.append(f"| {r['rule']} | {100 * r['accuracy']:.1f} | {100 * r['regret']:.1f} | "
                     f"{100 * r['worst_regret']:.1f} | {100 * r['wrong']:.0f}% |")
    return "\n".join(lines) + "\n"


def estimate_markdown(estimate: pd.DataFrame) -> str:
    """The chosen candidate's estimate against its true accuracy: bias, MAE and coverage."""
    lines = ["| family | shots | units | bias | MAE | coverage | bias (balanced) | MAE (balanced) | "
             "coverage (balanced) | bias, any candidate (balanced) | coverage, any candidate |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in estimate.iterrows():
        lines.append(f"| {r['family']} | {r['shots']} | {r['units']} | {100 * r['bias']:+.1f} | {100 * r['mae']:.1f}"
                     f" | {100 * r['coverage']:.0f}% | {100 * r['bias_balanced']:+.1f} | "
                     f"{100 * r['mae_balanced']:.1f} | {100 * r['coverage_balanced']:.0f}% | "
                     f"{100 * r['bias_balanced_any_candidate']:+.1f} | {100 * r['coverage_any_candidate']:.0f}% |")
    return "\n".join(lines) + "\n"


def markdown(summary: pd.DataFrame, estimate: pd.DataFrame, rules: pd.DataFrame) -> str:
    """The three tables of the docs, from the CSVs' frames."""
    return "\n".join([candidates_markdown(summary), rules_markdown(rules), estimate_markdown(estimate)])


#: ``--print``'s tables: the stored CSV each is read from and the function that prints it.
PRINTED = {"candidates": ("summary.csv", candidates_markdown), "rules": ("rules.csv", rules_markdown),
           "estimate": ("estimate.csv", estimate_markdown)}


def paired_markdown(paired: pd.DataFrame) -> str:
    """auto against the run's model, one row per family and shots."""
    lines = ["| family | shots | units | auto minus model | 95% interval |", "|---|---|---|---|---|"]
    for _, r in paired.iterrows():
        lines.append(f"| {r['family']} | {r['shots']} | {r['units']} | {100 * r['delta']:+.1f} | "
                     f"[{100 * r['low']:+.1f}, {100 * r['high']:+.1f}] |")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Parse the command line, measure, write the CSVs and the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/predict"))
    parser.add_argument("--shots", default="1,3,5,10")
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--steps", type=int, default=200, help="training steps of the synthetic family's run")
    parser.add_argument("--default-steps", type=int, default=None,
                        help="training steps of the synthetic-default family's run (default: training's default)")
    parser.add_argument("--families", default="karate,synthetic,cora,citeseer,facebook,chameleon,squirrel")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seed", type=int, default=0, help="seed of the label draws (the run's is 0)")
    parser.add_argument("--from-records", action="store_true", help="rewrite the tables from OUT/records.csv")
    parser.add_argument("--show", action="store_true",
                        help="print auto against the run's model from OUT/records.csv, writing nothing")
    parser.add_argument("--print", dest="table", choices=list(PRINTED), default=None,
                        help="print this table from OUT's stored CSV, writing nothing")
    args = parser.parse_args()
    if args.table:
        name, table = PRINTED[args.table]
        return sys.stdout.write(table(pd.read_csv(args.out / name)))
    if args.show:
        records = with_auto(pd.read_csv(args.out / "records.csv").round(4))
        return sys.stdout.write(paired_markdown(against_the_run(records)))
    if args.from_records:
        return write(pd.read_csv(args.out / "records.csv"), args.out, rewrite=False)
    torch.manual_seed(0)
    shots = [int(s) for s in args.shots.split(",")]
    families = args.families.split(",")
    graphs: dict[str, list] = {}
    modules: dict = {}
    if "karate" in families:
        graphs["karate"] = [karate()]
    if "synthetic" in families:
        _log("training the synthetic family's run")
        graphs["synthetic"], modules["synthetic"] = synthetic(args.steps)
    if "synthetic-default" in families:
        _log("building the default synthetic family and training its run")
        graphs["synthetic-default"], modules["synthetic-default"] = synthetic(args.default_steps, size="default")
    if any(f in families for f in ("cora", "citeseer", "facebook", "chameleon", "squirrel")):
        real = real_graphs(args.data)
        graphs.update({k: [v] for k, v in real.items() if k in families})
    rows = []
    for family in families:
        for gid, g in enumerate(graphs.get(family, [])):
            for k in shots:
                _log(f"{family} graph {gid}: {k} labels per class")
                rows += one_graph(family, g, gid, k, args.draws, modules.get(family), args.seed)
    write(pd.DataFrame(rows), args.out)


def write(records: pd.DataFrame, out: Path, rewrite: bool = True) -> None:
    """The CSVs and ``table.md`` from the records (``rewrite``: the records too), as stored: to 4 decimals,
    so that ``--from-records`` gives the same tables."""
    records = with_auto(records.round(4))
    summary, estimate = summarise(records)
    rules = rule_table(summary)
    paired = against_the_run(records)
    out.mkdir(parents=True, exist_ok=True)
    if rewrite:
        records.to_csv(out / "records.csv", index=False, float_format="%.4f")
    summary.to_csv(out / "summary.csv", index=False, float_format="%.4f")
    estimate.to_csv(out / "estimate.csv", index=False, float_format="%.4f")
    rules.to_csv(out / "rules.csv", index=False, float_format="%.4f")
    paired.to_csv(out / "against_the_run.csv", index=False, float_format="%.4f")
    text = markdown(summary, estimate, rules) + "\n" + paired_markdown(paired)
    (out / "table.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
