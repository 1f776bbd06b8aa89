"""gflkit plot: PNGs from small result tables and a tiny trained run."""
from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from gflkit_cli.main import cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

SHOTS_CSV = """\
model,aggregator,dataset,k_shot,accuracy,ci95
gfl,mean,small,1,41.0,3.1
gfl,mean,small,5,55.2,2.4
gfl,mean,small,10,61.8,2.0
protonet,,small,1,38.5,3.3
protonet,,small,5,50.1,2.9
protonet,,small,10,56.0,2.2
gfl,att,other,1,44.0,2.5
gfl,att,other,5,58.0,2.1
gfl,att,other,10,63.0,1.9
"""

SWEEP_CSV = """\
param,value,model,aggregator,dataset,split,n_graphs,k_shot,episodes,accuracy,ci95,std,seed
k-shot,3,gfl,mean,small,test,8,3,1,48.0,4.0,5.8,0
k-shot,5,gfl,mean,small,test,8,5,1,52.0,3.0,4.4,0
hops,2,gfl,mean,small,test,8,10,1,60.0,3.0,4.4,0
"""

COMPARE_CSV = """\
model,aggregator,dataset,split,n_graphs,k_shot,episodes,accuracy,ci95,std,seed
gfl,mean,small,test,8,10,1,61.8,2.0,2.9,0
gfl,att,small,test,8,10,1,62.5,1.8,2.6,0
protonet,,small,test,8,10,1,56.0,2.2,3.2,0
gfl,mean,other,test,8,10,1,70.1,1.5,2.1,0
protonet,,other,test,8,10,1,66.3,1.7,2.4,0
"""

ABLATE_CSV = """\
variant,model,aggregator,dataset,accuracy,ci95
full,gfl,mean,small,61.8,2.0
no-gate,gfl,mean,small,59.9,2.3
flat,gfl,mean,small,60.2,2.1
no-recon,gfl,mean,small,60.7,2.2
"""


# What compare --seed 0,1,2 writes now: rows over several seeds, refinements, the majority row.
COMPARE_SEEDS_CSV = """\
model,aggregator,dataset,split,n_seeds,n_graphs,k_shot,episodes,refine,accuracy,ci95,ci_over,std,balanced_accuracy,\
macro_f1,seed_std,reference,delta,delta_lo,delta_hi,prob_improvement,p_value,n_pairs,seed
gfl,mean,big,test,3,6,10,5,none,76.3,2.8,seeds x graphs,2.7,78.1,73.6,0.9,,,,,,,,"0,1,2"
gfl,mean,big,test,3,6,10,5,lp,78.5,2.9,seeds x graphs,2.8,80.1,76.2,0.8,gfl-mean,2.3,2.1,2.5,1.0,1e-9,18,"0,1,2"
protonet,,big,test,3,6,10,5,none,73.9,2.0,seeds x graphs,1.9,76.7,71.5,0.4,gfl-mean,-2.4,-3.3,-1.6,0.0,2e-6,18,"0,1,2"
majority,,big,test,3,6,10,5,none,49.1,4.4,seeds x graphs,4.2,25.0,16.4,0.0,gfl-mean,-27.2,-28.5,-25.9,0.0,7e-28,18,"0,1,2"
"""  # noqa: E501 (CSV rows as compare writes them)


@pytest.fixture
def plot_libraries():
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")


def _check_png(path, min_bytes: int = 5000) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > min_bytes  # axes, lines and text, not an empty canvas
    assert not list(path.parent.glob(f".{path.name}.*"))  # no temporary file left behind


def _plot(tmp_path, command: str, csv_text: str):
    src = tmp_path / f"{command}.csv"
    src.write_text(csv_text)
    out = tmp_path / f"{command}.png"
    result = CliRunner().invoke(cli, ["plot", command, str(src), "-o", str(out)])
    return result, out


@pytest.mark.parametrize("command, csv_text", [
    ("shots", SHOTS_CSV), ("shots", SWEEP_CSV), ("bars", COMPARE_CSV), ("bars", ABLATE_CSV),
])
def test_plot_tables_write_png(plot_libraries, tmp_path, command, csv_text):
    result, out = _plot(tmp_path, command, csv_text)
    assert result.exit_code == 0, result.output
    _check_png(out)


def test_old_and_new_result_tables_plot_together(plot_libraries, tmp_path):
    (tmp_path / "old.csv").write_text(COMPARE_CSV)  # one seed, no n_seeds, ci_over or prob_improvement
    (tmp_path / "new.csv").write_text(COMPARE_SEEDS_CSV)
    out = tmp_path / "both.png"
    result = CliRunner().invoke(cli, ["plot", "bars", str(tmp_path / "old.csv"), str(tmp_path / "new.csv"),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    _check_png(out)


def test_note_says_per_dataset_what_the_intervals_cover(tmp_path):
    import pandas as pd

    from gflkit.plotting import _aggregate

    (tmp_path / "old.csv").write_text(COMPARE_CSV)
    (tmp_path / "new.csv").write_text(COMPARE_SEEDS_CSV)
    df = pd.concat([pd.read_csv(tmp_path / "old.csv"), pd.read_csv(tmp_path / "new.csv")], ignore_index=True)
    out, note = _aggregate(df, "t.csv", ["dataset"])
    assert note == ("small, other: seed 0; intervals: 95% CI over test graphs | "
                    "big: seeds 0, 1, 2; intervals: 95% CI over (seed, graph) units")
    big = out[out.dataset == "big"].set_index("key")
    assert list(big.index) == ["gfl-mean", "gfl-mean+lp", "protonet", "majority"]  # a refined row is its own bar
    assert big.loc["gfl-mean", "ci95"] == 2.8 and big.loc["gfl-mean", "n_seeds"] == 3  # its own interval, kept
    assert big.loc["majority", "label"] == "Majority class"
    assert big.loc["gfl-mean+lp", "label"] == "GFL-mean + label propagation"


def test_rows_over_several_seeds_are_not_averaged_again(tmp_path):
    import pandas as pd

    from gflkit.errors import GFLError
    from gflkit.plotting import _aggregate

    (tmp_path / "new.csv").write_text(COMPARE_SEEDS_CSV)
    again = pd.read_csv(tmp_path / "new.csv")
    with pytest.raises(GFLError, match="cover several seeds each"):
        _aggregate(pd.concat([again, again.assign(seed="3,4")]), "t.csv", ["dataset"])


def test_ablation_bars_name_variants_under_them_and_values_clear_the_error_bars(plot_libraries, tmp_path):
    from gflkit.names import VARIANT_SHORT_NAMES
    from gflkit.plotting import bars_figure

    src = tmp_path / "a.csv"
    src.write_text("variant,model,aggregator,dataset,accuracy,ci95,seed\n" + "".join(
        f"{v},gfl,mean,{d},{acc + s},{ci},{s}\n" for d in ("small", "big")
        for v, acc, ci in (("full", 71.0, 1.0), ("structure", 69.9, 1.5), ("gate", 70.9, 0.5)) for s in (0, 1, 2)))
    fig = bars_figure(str(src))
    fig.canvas.draw()
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["small", "big"]  # a panel per dataset
    assert not fig.legends and all(ax.get_legend() is None for ax in axes)  # the x labels say it
    assert [t.get_text() for t in axes[0].get_xticklabels()] == [VARIANT_SHORT_NAMES[v] for v in
                                                                ("full", "structure", "gate")]
    for ax in axes:
        from matplotlib.container import BarContainer

        (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
        segments = bars.errorbar.lines[2][0].get_segments()  # one vertical line per bar: its error bar
        tops = [max(seg[:, 1]) for seg in segments]
        values = [t for t in ax.texts]
        assert len(values) == 3
        for text in values:
            x, y = text.xy
            assert any(abs(y - top) < 1e-9 for top in tops)  # anchored at the top of an error bar ...
            assert text.get_position()[1] > 0 and text.get_va() == "bottom"  # ... and written above it
            box = text.get_window_extent()
            assert box.y0 > ax.transData.transform((x, y))[1]  # on screen too
            assert box.y1 < ax.get_window_extent().y1  # inside the axes


def test_compare_legend_is_one_block_above_the_bars(plot_libraries, tmp_path):
    from gflkit.plotting import bars_figure

    src = tmp_path / "c.csv"
    src.write_text(COMPARE_SEEDS_CSV)
    fig = bars_figure(str(src))
    fig.canvas.draw()
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == ["GFL-mean", "Protonet", "Majority class", "+ label propagation"]  # colours, then hatchings
    assert legend.get_window_extent().y0 > fig.axes[0].get_window_extent().y1 - 1  # above the plot, not over it


def test_series_key_and_paper_label():
    import pandas as pd

    from gflkit.plotting import series_key, series_label

    assert series_key(pd.Series({"model": "gfl", "aggregator": "att"})) == "gfl-att"
    assert series_label(pd.Series({"model": "gfl", "aggregator": "att"})) == "GFL-att"
    assert series_label(pd.Series({"model": "matchingnet", "aggregator": float("nan")})) == "Matching Network"
    assert series_label(pd.Series({"model": "agf"})) == "All-Graph-Finetune"
    # the variant named "gate" is the model without the gate
    assert series_label(pd.Series({"model": "gfl", "variant": "gate"})) == "M2a: no hierarchical representation gate"
    assert series_label(pd.Series({"model": "gfl", "variant": "gate", "description": "no gate"})) == "no gate"
    assert series_label(pd.Series({"model": "mine", "variant": "no-gate"})) == "no-gate"  # unknown: kept
    assert series_label(pd.Series({"model": "majority", "aggregator": float("nan")})) == "Majority class"
    assert series_label(pd.Series({"model": "transfer-head"})) == "Transfer head"
    assert series_key(pd.Series({"model": "protonet", "refine": "cs"})) == "protonet+cs"
    assert series_label(pd.Series({"model": "protonet", "refine": "none"})) == "Protonet"


def test_display_names_are_written_in_one_place():
    from gflkit import experiments, plotting
    from gflkit.plotting import tsne
    from gflkit.names import MODEL_DISPLAY_NAMES, VARIANT_DISPLAY_NAMES, model_names

    assert plotting.MODEL_NAMES is MODEL_DISPLAY_NAMES and tsne.MODEL_NAMES is MODEL_DISPLAY_NAMES
    assert plotting.VARIANT_NAMES is VARIANT_DISPLAY_NAMES
    assert experiments.ABLATION_NAMES == {k: v for k, v in VARIANT_DISPLAY_NAMES.items() if k != "full"}
    assert set(model_names()) | {experiments.MAJORITY} <= set(MODEL_DISPLAY_NAMES)  # every model has its name


def test_colours_are_fixed_per_model_and_distinct():
    from gflkit.plotting import MODEL_NAMES, color_of

    models = [m for m in MODEL_NAMES if m != "gfl"]  # "gfl" is GFL-mean's colour
    assert len({color_of(m) for m in models}) == len(models)
    assert color_of("full") == color_of("gfl-mean") and color_of("structure") == color_of("protonet")
    assert color_of("something-new") == color_of("something-new")


def test_several_seeds_are_averaged_with_an_interval_over_seeds():
    import pandas as pd

    from gflkit.plotting import _aggregate
    from gflkit.evaluation.tables import mean_ci

    rows = [("gfl", "mean", s, acc) for s, acc in ((0, 60.0), (1, 64.0), (2, 65.0))] + [("protonet", "", 0, 55.0)]
    df = pd.DataFrame(rows, columns=["model", "aggregator", "seed", "accuracy"]).assign(ci95=1.0, dataset="d")
    out, note = _aggregate(df, "t.csv", ["dataset"])
    gfl = out[out.key == "gfl-mean"].iloc[0]
    mean, ci, _ = mean_ci([60.0, 64.0, 65.0])
    assert (gfl.accuracy, gfl.ci95, gfl.n_seeds) == pytest.approx((mean, ci, 3))
    assert out[out.key == "protonet"].iloc[0].ci95 == 1.0  # one seed: its own CI over graphs
    assert "seeds (0, 1, 2)" in note and "over seeds" in note


def test_plot_averages_several_seed_files(plot_libraries, tmp_path):
    other_seed = COMPARE_CSV.replace(",0\n", ",1\n").replace("61.8", "63.0")
    (tmp_path / "s1.csv").write_text(other_seed)
    (tmp_path / "s0.csv").write_text(COMPARE_CSV)
    out = tmp_path / "c.png"
    result = CliRunner().invoke(cli, ["plot", "bars", str(tmp_path / "s0.csv"), str(tmp_path / "s1.csv"),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    _check_png(out)


def test_axis_starts_above_zero_only_for_small_differences():
    import numpy as np

    from gflkit.plotting import _value_limits

    low, high = _value_limits(np.array([69.0, 70.5]), np.array([72.0, 73.0]))
    assert 60 <= low < 69 and low % 5 == 0 and high > 73
    assert _value_limits(np.array([40.0, 90.0]), np.array([45.0, 95.0])) is None


def test_plot_missing_column_is_one_line_error(plot_libraries, tmp_path):
    result, out = _plot(tmp_path, "shots", "model,accuracy\ngfl,50\n")
    assert result.exit_code == 1
    assert "missing column(s) k_shot, ci95" in result.output
    assert not out.exists()


def test_plot_duplicate_rows_are_rejected(plot_libraries, tmp_path):
    result, _ = _plot(tmp_path, "bars", COMPARE_CSV + "gfl,mean,small,test,8,10,1,60.0,2.0,2.9,0\n")
    assert result.exit_code == 1
    assert "several rows for gfl-mean" in result.output


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.slow
def test_plot_formats_and_dpi(plot_libraries, tmp_path):
    src = tmp_path / "r.csv"
    src.write_text(SHOTS_CSV)
    for name, magic in (("f.pdf", b"%PDF"), ("f.svg", b"<?xml")):
        result = CliRunner().invoke(cli, ["plot", "shots", str(src), "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        assert (tmp_path / name).read_bytes().startswith(magic)
    first = (tmp_path / "f.pdf").read_bytes()
    CliRunner().invoke(cli, ["plot", "shots", str(src), "-o", str(tmp_path / "f.pdf"), "--format", "pdf"])
    assert (tmp_path / "f.pdf").read_bytes() == first  # no creation date: the same bytes again
    sizes = []
    for dpi in ("60", "120"):
        out = tmp_path / f"d{dpi}.png"
        assert CliRunner().invoke(cli, ["plot", "shots", str(src), "-o", str(out), "--dpi", dpi]).exit_code == 0
        sizes.append(_png_size(out))
    assert sizes[1][0] == pytest.approx(2 * sizes[0][0], abs=2)


def test_plot_output_name_and_format_must_agree(tmp_path):
    src = tmp_path / "r.csv"
    src.write_text(SHOTS_CSV)
    result = CliRunner().invoke(cli, ["plot", "shots", str(src), "-o", str(tmp_path / "fig.txt")])
    assert result.exit_code == 2
    assert "ending in .png, .pdf or .svg" in result.output
    result = CliRunner().invoke(cli, ["plot", "shots", str(src), "-o", str(tmp_path / "fig.png"), "--format", "svg"])
    assert result.exit_code == 1 and "but --format svg" in result.output
    assert not (tmp_path / "fig.png").exists()


def test_missing_plot_package_is_one_line(monkeypatch, tmp_path):
    for module in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, module, None)  # a None entry makes the import fail
    result, out = _plot(tmp_path, "shots", SHOTS_CSV)
    assert result.exit_code == 1
    message = result.output.strip()
    assert len(message.splitlines()) == 1
    assert "matplotlib" in message and "pip install 'gflkit[plot]'" in message
    assert not out.exists()


def test_missing_sklearn_names_it():
    from gflkit.errors import GFLError
    from gflkit.plotting import require

    with pytest.raises(GFLError, match=r"scikit-learn.*pip install 'gflkit\[plot\]'"):
        require("sklearn_not_installed_here", "scikit-learn")


@pytest.fixture(scope="module")
def tiny_runs(small_family_dir, tmp_path_factory):
    """A GFL run and a Protonet run, 3 meta-training steps each."""
    import gflkit
    from gflkit.config import TrainConfig

    base = tmp_path_factory.mktemp("runs")
    runs = {}
    for name in ("gfl", "protonet"):
        runs[name] = base / name
        gflkit.train(str(small_family_dir), model=name, train_cfg=TrainConfig(steps=3, eval_every=3),
                     run_dir=runs[name], eval_split=None, progress=False)
    return runs


@pytest.mark.slow
def test_plot_tsne_two_rows(plot_libraries, tiny_runs, small_family_dir, tmp_path):
    out = tmp_path / "tsne.png"
    result = CliRunner().invoke(cli, [
        "plot", "tsne", str(tiny_runs["gfl"]), str(small_family_dir), "--baseline-run", str(tiny_runs["protonet"]),
        "--negatives", "40", "-o", str(out),
    ])
    assert result.exit_code == 0, result.output
    _check_png(out, min_bytes=20000)


def test_tsne_panels_are_seeded(plot_libraries, small_family):
    import numpy as np

    from gflkit.plotting.tsne import tsne_panels

    g = small_family.graphs[small_family.graph_ids("test")[0]]
    label = g.ndata["label"].numpy()[:120]
    z = g.ndata["feat"].numpy()[:120]
    first = tsne_panels(z, label, 2, negatives=20, seed=3)
    again = tsne_panels(z, label, 2, negatives=20, seed=3)
    assert len(first) == 2
    for (pos, neg), (pos2, neg2), c in zip(first, again, range(2)):
        assert pos.shape == ((label == c).sum(), 2)
        assert neg.shape == (20, 2)
        np.testing.assert_array_equal(pos, pos2)
        np.testing.assert_array_equal(neg, neg2)


def test_plot_tsne_rejects_bad_graph_id(plot_libraries, tiny_runs, small_family_dir, tmp_path):
    result = CliRunner().invoke(cli, [
        "plot", "tsne", str(tiny_runs["gfl"]), str(small_family_dir), "--graph-id", "999",
        "-o", str(tmp_path / "t.png"),
    ])
    assert result.exit_code == 1
    assert "--graph-id 999" in result.output
