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


def test_series_label_names_gfl_by_aggregator():
    import pandas as pd

    from gflkit.plotting import series_label

    assert series_label(pd.Series({"model": "gfl", "aggregator": "att"})) == "gfl-att"
    assert series_label(pd.Series({"model": "protonet", "aggregator": float("nan")})) == "protonet"
    assert series_label(pd.Series({"model": "gfl", "aggregator": "mean", "variant": "no-gate"})) == "no-gate"


def test_plot_missing_column_is_one_line_error(plot_libraries, tmp_path):
    result, out = _plot(tmp_path, "shots", "model,accuracy\ngfl,50\n")
    assert result.exit_code == 1
    assert "missing column(s) k_shot, ci95" in result.output
    assert not out.exists()


def test_plot_duplicate_rows_are_rejected(plot_libraries, tmp_path):
    result, _ = _plot(tmp_path, "bars", COMPARE_CSV + "gfl,mean,small,test,8,10,1,60.0,2.0,2.9,1\n")
    assert result.exit_code == 1
    assert "several rows for gfl-mean" in result.output


def test_plot_output_must_be_png(tmp_path):
    src = tmp_path / "r.csv"
    src.write_text(SHOTS_CSV)
    result = CliRunner().invoke(cli, ["plot", "shots", str(src), "-o", str(tmp_path / "fig.pdf")])
    assert result.exit_code == 2
    assert "ending in .png" in result.output


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
                     out=runs[name], eval_split=None, progress=False)
    return runs


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

    from gflkit.plotting import tsne_panels

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
