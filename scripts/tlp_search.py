"""TLP as its paper runs it, with its settings chosen on the val graphs of one family, then scored on the test.

    OMP_NUM_THREADS=1 python scripts/tlp_search.py facebook --seed 0 --episodes 5 --out results/tlp

A small search, the same for every family: GRACE's two published presets (its
Cora settings, the model's defaults: 256/128 units, edges dropped at 0.2 and
0.4, features masked at 0.3 and 0.4, tau 0.4; its Citeseer settings: 512/256
units, 0.2 and 0.0, 0.3 and 0.2, tau 0.9), each pretrained once on the train
graphs (the warm start, its step chosen by the frozen probe on the val graphs
as ``gflkit train`` does), then pretrained further on each val graph for each
count of ``--transductive-steps`` (0, the frozen probe; 50; 200, GRACE's
epochs on Cora; one run of the steps per graph, read at each count:
:meth:`~gflkit.models.baselines.tlp.TransductiveLinearProbe.adaptations`).
With ``--model tlp-bgrl`` the presets are BGRL's released WikiCS settings
(the model's defaults: 512/256 units, a 512-unit predictor, edges 0.2 and
0.3, features 0.2 and 0.1) and its Amazon Computers settings (256/128 units,
edges 0.5 and 0.4, features 0.2 and 0.1), and the files end in ``_tlp-bgrl``.
The setting with the best mean val accuracy is chosen; the test graphs are read
only after that, once: the chosen setting on the test graphs beside the
non-transfer GCN (``gflkit evaluate DATA --baseline gcn``), on the same episodes,
with the paired difference.

Writes ``OUT/<family>_search.csv`` (one row per setting: val accuracy over
graphs and episodes, the warm start's step, ``chosen``) and
``OUT/<family>_test.csv`` (the columns of ``gflkit compare``: the GCN, then
TLP (GRACE) with the chosen options, paired with the GCN: ``delta`` is TLP − GCN). ``--table`` prints the
Markdown table of stored results instead (no training).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

#: Published settings by model: GRACE's (Zhu et al. 2020) for ``tlp``, BGRL's (Thakoor et al. 2022; its
#: released configurations, both at its learning rate 5e-4) for ``tlp-bgrl``.
PRESETS = {
    "tlp": {
        "grace-cora": {"hidden_feats": 256, "out_feats": 128, "proj_feats": 128, "drop_edge_1": 0.2,
                       "drop_edge_2": 0.4, "mask_feat_1": 0.3, "mask_feat_2": 0.4, "tau": 0.4},
        "grace-citeseer": {"hidden_feats": 512, "out_feats": 256, "proj_feats": 256, "drop_edge_1": 0.2,
                           "drop_edge_2": 0.0, "mask_feat_1": 0.3, "mask_feat_2": 0.2, "tau": 0.9},
    },
    "tlp-bgrl": {
        "bgrl-wikics": {"hidden_feats": 512, "out_feats": 256, "proj_feats": 512, "drop_edge_1": 0.2,
                        "drop_edge_2": 0.3, "mask_feat_1": 0.2, "mask_feat_2": 0.1},
        "bgrl-amazon-computers": {"hidden_feats": 256, "out_feats": 128, "proj_feats": 512, "drop_edge_1": 0.5,
                                  "drop_edge_2": 0.4, "mask_feat_1": 0.2, "mask_feat_2": 0.1},
    },
}


def stem(family: str, model: str) -> str:
    """The file stem of a family's search for ``model``: ``family`` for ``tlp``, ``family_tlp-bgrl`` else."""
    return family if model == "tlp" else f"{family}_{model}"


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def search(data: str, seed: int, episodes: int, counts: list[int],
           model_name: str = "tlp") -> tuple[pd.DataFrame, dict, object]:
    """One row per (preset, transductive steps): the mean val accuracy; and the chosen options and model."""
    import torch

    import gflkit
    from gflkit.config import EpisodeConfig, TrainConfig
    from gflkit.episodes import EpisodeSampler
    from gflkit.graphs import GraphCache
    from gflkit.models.baselines.common import standardise
    from gflkit.training.meta import fit_transfer

    collection = gflkit.load_collection(data)
    episode_cfg = EpisodeConfig()
    sampler = EpisodeSampler(collection, "val", episode_cfg, seed).require_graphs()
    cache = GraphCache(collection)
    rows, models = [], {}
    for preset, options in PRESETS[model_name].items():
        _log(f"{data}: pretraining {preset} on the train graphs")
        result = fit_transfer(model_name, collection, episode_cfg, TrainConfig(seed=seed), options=options,
                              progress=False)
        model = models[preset] = result.model.eval()
        hits: dict[int, list[float]] = {n: [] for n in counts}
        for gid in sampler.graph_ids:
            g = cache[gid]
            for n, encoder in model.adaptations(g, counts):
                with torch.no_grad():
                    z = standardise(encoder(g))
                for e in range(episodes):
                    ep = sampler.episode(gid, e)
                    pred = model.class_scores(g, list(ep.support), z, nodes=ep.query).argmax(1)
                    hits[n].append(float((pred == ep.query_label).double().mean()))
            _log(f"{data}: {preset}, val graph {gid} done")
        for n in counts:
            rows.append({"dataset": data, "preset": preset, "transductive_steps": n, "seed": seed,
                         "episodes": episodes, "n_graphs": len(sampler.graph_ids),
                         "val_accuracy": 100 * sum(hits[n]) / len(hits[n]), "pretrain_step": result.best_step,
                         "options": json.dumps({**options, "transductive_steps": n}, sort_keys=True)})
    table = pd.DataFrame(rows)
    best = table["val_accuracy"].idxmax()  # the first of equals: the order above
    table["chosen"] = table.index == best
    chosen = table.loc[best]
    model = models[chosen["preset"]]
    model.options = {**model.options, "transductive_steps": int(chosen["transductive_steps"])}
    return table, json.loads(chosen["options"]), model


def test_rows(data: str, seed: int, episodes: int, options: dict, model, model_name: str = "tlp") -> pd.DataFrame:
    """TLP with the chosen options and the non-transfer GCN on the test graphs, paired on episodes."""
    import gflkit
    from gflkit.config import EpisodeConfig
    from gflkit.episodes import EpisodeSampler
    from gflkit.evaluation.scoring import baseline_records, graph_records, paired, result_row
    from gflkit.evaluation.tables import to_frame
    from gflkit.models.baselines import PER_GRAPH

    collection = gflkit.load_collection(data)
    episode_cfg = EpisodeConfig()
    sampler = EpisodeSampler(collection, "test", episode_cfg, seed).require_graphs()
    tlp = graph_records(model, sampler, episodes)
    gcn = baseline_records(PER_GRAPH["gcn"], sampler, episodes, seed)
    rows = [result_row("gcn", "", collection, "test", gcn, episode_cfg, episodes, seed),
            {**result_row(model_name, "", collection, "test", tlp, episode_cfg, episodes, seed), "reference": "gcn",
             **paired(tlp, gcn)}]
    table = to_frame(rows)
    table.insert(0, "options", ["", json.dumps(options, sort_keys=True)])
    return table


def markdown(folder: Path, names: list[str], detail: list[str] | None = None, model: str = "tlp") -> str:
    """The stored test results of ``names`` (``LABEL=family``, the family's files under ``folder``; a
    ``seedN/family`` path for another seed's), one row each, then every setting the search scored for the
    labels in ``detail`` (default: all); ``model``: whose search (``tlp`` or ``tlp-bgrl``)."""
    from gflkit.names import display_name

    lines = ["| family | chosen on the val graphs (preset, transductive steps) | its val accuracy (all settings) | "
             f"{display_name(model)}, test | non-transfer GCN, test | TLP − GCN [95% CI], p |",
             "|---|---|---|---|---|---|"]
    for item in names:
        label, _, family = item.partition("=")
        search_table = pd.read_csv(folder / f"{stem(family, model)}_search.csv")
        test = pd.read_csv(folder / f"{stem(family, model)}_test.csv").set_index("model")
        best = search_table[search_table["chosen"]].iloc[0]
        low, high = search_table["val_accuracy"].min(), search_table["val_accuracy"].max()
        tlp, gcn = test.loc[model], test.loc["gcn"]
        lines.append(
            f"| {label} | {best['preset']}, {int(best['transductive_steps'])} | {best['val_accuracy']:.2f} "
            f"({low:.2f}–{high:.2f}) | {tlp['accuracy']:.2f} ± {tlp['ci95']:.2f} | {gcn['accuracy']:.2f} ± "
            f"{gcn['ci95']:.2f} | {tlp['delta']:+.2f} [{tlp['delta_lo']:+.2f}, {tlp['delta_hi']:+.2f}], "
            f"{tlp['p_value']:.2g} |")
    settings = []
    for item in names:
        label, _, family = item.partition("=")
        if detail is not None and label not in detail:
            continue
        for r in pd.read_csv(folder / f"{stem(family, model)}_search.csv").itertuples():
            mark = " (chosen)" if r.chosen else ""
            settings.append(f"| {label} | {r.preset} | {r.transductive_steps}{mark} | {r.val_accuracy:.2f} "
                            f"| {r.pretrain_step} |")
    if settings:  # the second table, unless no label is detailed
        lines += ["", "| family | preset | transductive steps | val accuracy | warm start's step |",
                  "|---|---|---|---|---|", *settings]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Search and score each family given, or print the table of stored results (``--table``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+", help="a collection name, or with --table LABEL=family items")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--transductive-steps", default="0,50,200",
                        help="counts to try, comma-separated (0: the frozen probe)")
    parser.add_argument("--out", type=Path, default=Path("results/tlp"))
    parser.add_argument("--table", action="store_true", help="print the Markdown table of stored results")
    parser.add_argument("--detail", help="with --table: the labels whose every setting is listed (default: all)")
    parser.add_argument("--model", choices=list(PRESETS), default="tlp",
                        help="tlp (GRACE's presets) or tlp-bgrl (BGRL's); files of tlp-bgrl end in _tlp-bgrl")
    args = parser.parse_args(argv)
    if args.table:
        sys.stdout.write(markdown(args.out, args.data, args.detail.split(",") if args.detail else None, args.model))
        return
    counts = sorted({int(c) for c in args.transductive_steps.split(",")})
    args.out.mkdir(parents=True, exist_ok=True)
    for data in args.data:
        search_csv = args.out / f"{stem(data, args.model)}_search.csv"
        test_csv = args.out / f"{stem(data, args.model)}_test.csv"
        table, options, model = search(data, args.seed, args.episodes, counts, args.model)
        table.to_csv(search_csv, index=False, float_format="%.4f")
        _log(f"{data}: chose {options}")
        test_rows(data, args.seed, args.episodes, options, model, args.model).to_csv(
            test_csv, index=False, float_format="%.4f")
        _log(f"wrote {search_csv} and {test_csv}")


if __name__ == "__main__":
    main()
