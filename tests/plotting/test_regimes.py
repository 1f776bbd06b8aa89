"""gflkit plot heatmap / lines: figures of a regime map (compare rows with property columns)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from gflkit_cli.main import cli

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HEADER = ("homophily,snr,model,aggregator,dataset,split,n_seeds,n_graphs,k_shot,episodes,refine,accuracy,ci95,"
          "ci_over,seed_std,reference,delta,delta_lo,delta_hi,prob_improvement,p_value,n_pairs,seed")


def _map_csv() -> str:
    """A 3 x 2 map: gfl-mean, protonet (the reference) and lp in every cell, as regime_map.py writes it."""
    rows = [HEADER]
    for snr in ("0.08", "0.32"):
        for homophily in ("0.2", "0.5", "0.8"):
            gain = (float(homophily) - 0.5) * 10
            acc = 50 + 40 * float(snr)
            rows.append(f"{homophily},{snr},gfl,mean,regime-cell,test,3,10,10,1,none,{acc + gain:.2f},2.0,"
                        f"seeds x graphs,0.5,protonet,{gain:.2f},{gain - 1.5:.2f},{gain + 1.5:.2f},0.5,0.1,30,"
                        '"0,1,2"')
            rows.append(f"{homophily},{snr},protonet,,regime-cell,test,3,10,10,1,none,{acc:.2f},2.0,"
                        'seeds x graphs,0.4,,,,,,,,"0,1,2"')
            rows.append(f"{homophily},{snr},lp,,regime-cell,test,3,10,10,1,none,{acc - 10:.2f},2.0,"
                        'seeds x graphs,0.0,protonet,-10.00,-12.00,-8.00,0.0,1e-5,30,"0,1,2"')
    return "\n".join(rows) + "\n"


@pytest.fixture()
def regime_map(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text(_map_csv())
    return path


def _plot(*args):
    return CliRunner().invoke(cli, ["plot", *map(str, args)])


def test_heatmap_of_one_model(regime_map, tmp_path):
    out = tmp_path / "figs" / "map.png"
    out.parent.mkdir()
    result = _plot("heatmap", regime_map, "--x", "homophily", "--y", "snr", "--model", "lp", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(PNG_MAGIC) and result.stdout == ""
    assert sorted(p.name for p in out.parent.iterdir()) == ["map.png"]  # nothing else left behind


@pytest.mark.parametrize("extra", [[], ["--value", "accuracy", "--model", "protonet"], ["--model", "gfl-mean"]])
def test_heatmap_options(regime_map, tmp_path, extra):
    out = tmp_path / "map.svg"
    result = _plot("heatmap", regime_map, "--x", "snr", "--y", "homophily", *extra, "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text().lstrip().startswith("<?xml")


def test_heatmap_cells_hold_the_model_deltas(regime_map):
    from gflkit.plotting.regimes import heatmap_figure

    fig = heatmap_figure(regime_map, "homophily", "snr", model="gfl-mean")
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    # p = 0.1 for every gfl-mean cell: its intervals exclude 0 at +-3 (unadjusted) but Holm over the map's
    # twelve comparisons shows none; lp's p = 1e-5 stays below 0.05 after it
    assert texts == sorted(["-3.0", "+0.0", "+3.0"] * 2)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (2, 3) and float(image[0, 0]) == pytest.approx(-3.0)
    lp = heatmap_figure(regime_map, "homophily", "snr", model="lp")
    assert sorted(t.get_text() for t in lp.axes[0].texts) == ["-10.0*"] * 6
    assert any("adjusted over" in t.get_text() for t in fig.texts)


def test_heatmap_without_p_values_marks_by_the_interval(tmp_path):
    from gflkit.plotting.regimes import heatmap_figure

    at = HEADER.split(",").index("p_value")
    lines = _map_csv().splitlines()
    lines[1:] = [",".join(c if i != at else "" for i, c in enumerate(line.split(","))) for line in lines[1:]]
    path = tmp_path / "no_p.csv"
    path.write_text("\n".join(lines) + "\n")
    fig = heatmap_figure(path, "homophily", "snr", model="gfl-mean")
    assert sorted(t.get_text() for t in fig.axes[0].texts) == sorted(["-3.0*", "+0.0", "+3.0*"] * 2)
    assert any("unadjusted" in t.get_text() for t in fig.texts)


def test_heatmap_marks_a_cell_by_its_adjusted_p_value_when_the_file_has_one(tmp_path):
    from gflkit.plotting.regimes import heatmap_figure

    lines = _map_csv().splitlines()
    lines[0] = lines[0].replace("p_value,", "p_value,p_adjusted,")
    # gfl-mean's intervals exclude 0 at +-3 (unadjusted), but after adjustment only homophily 0.8 is shown
    for i, line in enumerate(lines[1:], 1):
        cells = line.split(",")
        at = HEADER.split(",").index("p_value")
        shown = cells[2] == "gfl" and cells[0] == "0.8"
        cells.insert(at + 1, "" if not cells[at] else ("0.01" if shown else "0.2"))
        lines[i] = ",".join(cells)
    path = tmp_path / "adjusted.csv"
    path.write_text("\n".join(lines) + "\n")
    fig = heatmap_figure(path, "homophily", "snr", model="gfl-mean")
    assert sorted(t.get_text() for t in fig.axes[0].texts) == sorted(["-3.0", "+0.0", "+3.0*"] * 2)
    assert any("adjusted over" in t.get_text() for t in fig.texts)


@pytest.mark.parametrize("args, option", [
    (["--x", "nope", "--y", "snr"], "--x"),
    (["--x", "homophily", "--y", "snr", "--model", "maml"], "--model"),
    (["--x", "homophily", "--y", "homophily"], "--x"),
    (["--x", "homophily", "--y", "snr", "--value", "median"], "--value"),
    (["--y", "snr"], "--x"),
])
def test_heatmap_refuses_bad_options(regime_map, tmp_path, args, option):
    out = tmp_path / "map.png"
    result = _plot("heatmap", regime_map, *args, "-o", out)
    assert result.exit_code in (1, 2), result.output
    last = result.stderr.strip().splitlines()[-1]  # a usage error comes after click's usage lines
    assert last.startswith("Error:") and option in last and "Traceback" not in result.output
    assert not out.exists()


def test_heatmap_refuses_two_rows_for_one_cell(regime_map, tmp_path):
    out = tmp_path / "map.png"
    result = _plot("heatmap", regime_map, regime_map, "--x", "homophily", "--y", "snr", "-o", out)
    assert result.exit_code == 1 and "several" in result.stderr and "homophily=" in result.stderr
    assert not out.exists()


def test_heatmap_without_delta_asks_for_accuracy(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("homophily,snr,model,accuracy,ci95\n0.2,0.1,protonet,50,2\n0.5,0.1,protonet,55,2\n")
    out = tmp_path / "map.png"
    result = _plot("heatmap", path, "--x", "homophily", "--y", "snr", "-o", out)
    assert result.exit_code == 1 and "--value accuracy" in result.stderr
    assert _plot("heatmap", path, "--x", "homophily", "--y", "snr", "--value", "accuracy", "-o", out).exit_code == 0


@pytest.mark.parametrize("extra", [["--panel", "snr"], ["--panel", "snr", "--value", "delta"]])
def test_lines_over_a_property(regime_map, tmp_path, extra):
    out = tmp_path / "lines.png"
    result = _plot("lines", regime_map, "--x", "homophily", *extra, "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_lines_over_shots_of_a_sweep(tmp_path):
    path = tmp_path / "shots.csv"
    path.write_text("model,aggregator,dataset,k_shot,accuracy,ci95,seed\n"
                    "gfl,mean,small,1,41,3,0\ngfl,mean,small,5,55,2,0\nprotonet,,small,1,38,3,0\n"
                    "protonet,,small,5,50,3,0\n")
    out = tmp_path / "lines.pdf"
    assert _plot("lines", path, "--x", "k_shot", "-o", out).exit_code == 0
    assert out.read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("args, option", [(["--x", "nope"], "--x"), (["--x", "snr", "--panel", "nope"], "--panel"),
                                          (["--x", "snr", "--panel", "snr"], "--panel")])
def test_lines_refuses_bad_options(regime_map, tmp_path, args, option):
    out = tmp_path / "lines.png"
    result = _plot("lines", regime_map, *args, "-o", out)
    assert result.exit_code == 1 and option in result.stderr and not out.exists()


def test_lines_without_the_panel_of_a_second_property_says_so(regime_map, tmp_path):
    out = tmp_path / "lines.png"
    result = _plot("lines", regime_map, "--x", "homophily", "-o", out)
    assert result.exit_code == 1 and "--panel" in result.stderr and not out.exists()
