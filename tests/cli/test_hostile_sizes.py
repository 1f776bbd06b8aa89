"""Sizes from options and from table contents, checked before work; outputs that are what they claim.

Each case runs one ``gflkit`` command (or the library call under it) with a
count or size that does not fit, and checks that it is refused before the
work in one line that names the option and the largest value that fits
(exit 2), or that the bad input is named in one line (exit 1). The memory a
check sees is fixed where the answer depends on it (``GIB`` below).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import invoke, one_line_error

import gflkit  # noqa: F401  (before dgl)
import gflkit.sizes
from gflkit.errors import DataFormatError, GFLError, SizeError

GIB = 2**30


@pytest.fixture
def memory(monkeypatch):
    """The memory the size checks see: 4 GiB, whatever this machine has."""
    monkeypatch.setattr(gflkit.sizes, "available_memory", lambda: 4 * GIB)
    import gflkit.data.synthetic as synthetic

    monkeypatch.setattr(synthetic, "available_memory", lambda: 4 * GIB)
    return 4 * GIB


def _synthetic(tmp_path: Path, *args) -> "object":
    return invoke("preprocess", "synthetic", "--small", "--graphs", "1,0,1", "--out-dir", tmp_path / "out", *args)


# --------------------------------------------------------------------------- the mechanism


def test_largest_fitting_is_the_largest_value_within_the_budget():
    assert gflkit.sizes.largest_fitting(lambda v: 10 * v, 95, 1, 10**9) == 9
    assert gflkit.sizes.largest_fitting(lambda v: 10 * v, 5, 1, 10**9) is None
    with pytest.raises(SizeError) as err:
        gflkit.sizes.require_fit("width", 10**9, lambda v: 8 * v, "a layer", budget=800)
    assert err.value.largest == 100 and "width=1000000000" in str(err.value) and "at most 100 fits" in str(err.value)


# --------------------------------------------------------------------------- preprocess synthetic


def test_a_million_classes_are_refused_before_any_graph_is_drawn(tmp_path):
    line = one_line_error(_synthetic(tmp_path, "--classes", 1000000), "--classes 1000000", "at most 95 fits", code=2)
    assert "labelled nodes per class" in line and not (tmp_path / "out").exists()


def test_more_classes_than_small_graphs_hold_are_refused(tmp_path):
    one_line_error(_synthetic(tmp_path, "--classes", 500), "--classes 500", "graphs of 200 nodes", code=2)


def test_classes_too_many_for_episodes_are_warned_about_in_one_line(tmp_path):
    result = _synthetic(tmp_path, "--classes", 40)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "--classes 40" in warnings[0] and "k_shot + 1" in warnings[0]


def test_a_huge_degree_names_the_largest_that_fits(tmp_path, memory):
    line = one_line_error(_synthetic(tmp_path, "--degree", "1e9"), "--degree 1000000000", "at most", code=2)
    largest = int(line.rsplit("at most ", 1)[1].split()[0])
    from gflkit.data.synthetic import SMALL_SPEC

    spec = replace(SMALL_SPEC, n_train=1, n_val=0, n_test=1)
    assert replace(spec, min_degree=largest, max_degree=largest).estimated_bytes() <= memory
    assert replace(spec, min_degree=largest + 1, max_degree=largest + 1).estimated_bytes() > memory


@pytest.mark.parametrize("option", ["--snr", "--test-shift"])
def test_scales_that_overflow_the_features_are_refused(tmp_path, option):
    one_line_error(_synthetic(tmp_path, option, "1e300"), f"{option} 1e+300", "overflow float32", code=2)
    assert not (tmp_path / "out").exists()


def test_the_generator_checks_its_features_as_the_readers_do(monkeypatch):
    import gflkit.data.synthetic as synthetic

    monkeypatch.setattr(synthetic, "FEATURE_LIMIT", float("inf"))  # past the check before the work
    spec = replace(synthetic.SMALL_SPEC, n_train=1, n_val=0, n_test=0, min_nodes=20, max_nodes=20,
                   center_scale=1e300)
    with pytest.raises(GFLError, match="graph 0 .*not finite"):
        synthetic.make_synthetic_family(spec)


def test_many_classes_are_drawn_as_a_loop_over_classes_would_draw_them():
    """The draw visits only the communities edges start from, in time linear in the edges; the numbers are
    those of the loop over every class it replaced (digest of that loop's family, this spec and seed)."""
    import hashlib

    from gflkit.data.synthetic import SMALL_SPEC, make_synthetic_family

    family = make_synthetic_family(replace(SMALL_SPEC, n_train=2, n_val=0, n_test=1, num_classes=30), seed=3)
    digest = hashlib.sha256()
    for g in family.graphs:
        src, dst = g.edges()
        for tensor in (src, dst, g.ndata["feat"], g.ndata["label"]):
            digest.update(tensor.numpy().tobytes())
    assert digest.hexdigest()[:16] == "de015c613744b779"


def test_out_dir_that_is_the_current_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    for where in (".", ".."):
        one_line_error(invoke("preprocess", "synthetic", "--small", "--out-dir", where), "--out-dir", code=2)
    assert (tmp_path / "keep.txt").read_text() == "mine"


# --------------------------------------------------------------------------- preprocess tables


def _label_tables(tmp_path: Path, labels) -> Path:
    folder = tmp_path / "tables"
    folder.mkdir()
    n = len(labels)
    (folder / "nodes.csv").write_text("id,label,f\n" + "".join(f"{i},{v},{i % 3}\n" for i, v in enumerate(labels)))
    (folder / "edges.csv").write_text("src,dst\n" + "".join(f"{i},{(i + 1) % n}\n" for i in range(n)))
    return folder


def test_more_quantile_bins_than_distinct_labels_are_refused(tmp_path):
    folder = _label_tables(tmp_path, [i % 7 for i in range(40)])
    one_line_error(invoke("preprocess", "tables", folder, "--bin-quantiles", 100000000, "--out-dir", tmp_path / "o"),
                   "--bin-quantiles 100000000", "7 distinct", "at most 7 fits", code=2)


def test_binning_an_all_equal_label_column_is_refused(tmp_path):
    folder = _label_tables(tmp_path, [5] * 40)
    one_line_error(invoke("preprocess", "tables", folder, "--bin-quantiles", 3, "--out-dir", tmp_path / "o"),
                   "nodes.csv", "'label'", "one class")
    assert not (tmp_path / "o").exists()


def test_graphsage_links_and_edges_together_are_refused(tmp_path):
    from gflkit.data.sources.reddit import read_graphsage

    nodes = [{"id": i} for i in range(3)]
    (tmp_path / "toy-G.json").write_text(json.dumps({"nodes": nodes, "links": [{"source": 0, "target": 1}],
                                                     "edges": [{"source": 1, "target": 2}]}))
    (tmp_path / "toy-id_map.json").write_text(json.dumps({str(i): i for i in range(3)}))
    (tmp_path / "toy-class_map.json").write_text(json.dumps({str(i): i % 2 for i in range(3)}))
    np.save(tmp_path / "toy-feats.npy", np.ones((3, 2), dtype=np.float32))
    with pytest.raises(DataFormatError, match='toy-G.json: both "links" and "edges"'):
        read_graphsage(tmp_path, num_classes=None)


# --------------------------------------------------------------------------- train and evaluate


def test_episodes_whose_records_do_not_fit_are_refused(root, memory):
    one_line_error(invoke("evaluate", "--baseline", "lp", "tiny", "--episodes", 10**9, "--data-root", root),
                   "--episodes 1000000000", "at most", code=2)


def test_a_k_shot_no_graph_can_give_names_the_largest_that_does(root):
    line = one_line_error(invoke("evaluate", "--baseline", "lp", "tiny", "--k-shot", 10**6, "--data-root", root),
                          "--k-shot 1000000", "at most", code=2)
    largest = int(line.rsplit("at most ", 1)[1].split()[0])
    result = invoke("evaluate", "--baseline", "lp", "tiny", "--k-shot", largest, "--data-root", root)
    assert result.exit_code == 0, result.output


def test_a_hidden_width_from_the_command_line_or_config_that_does_not_fit(root, tmp_path, memory):
    one_line_error(invoke("train", "tiny", "--hidden-feats", 10**9, "--data-root", root, "--run-dir", tmp_path / "r"),
                   "--hidden-feats 1000000000", "at most", code=2)
    config = tmp_path / "big.json"
    config.write_text(json.dumps({"model_config": {"hidden_feats": 10**9}}))
    one_line_error(invoke("train", "tiny", "--config", config, "--data-root", root, "--run-dir", tmp_path / "r"),
                   "--hidden-feats 1000000000", "at most", code=2)
    assert not (tmp_path / "r").exists()


def test_a_baseline_width_from_option_that_does_not_fit(root, tmp_path, memory):
    one_line_error(invoke("train", "tiny", "--model", "gmeta", "--option", "hidden_feats=1000000000",
                          "--data-root", root, "--run-dir", tmp_path / "r"),
                   "--option hidden_feats=1000000000", "at most", code=2)


@pytest.mark.parametrize("pair, needle", [("hops=1.5", "expected an integer"), ("hops=true", "expected an integer"),
                                          ("inner_lr=NaN", "expected a number"), ("lr=0.1", "no option lr")])
def test_baseline_options_of_the_wrong_type_are_refused_when_parsed(root, tmp_path, pair, needle):
    one_line_error(invoke("train", "tiny", "--model", "gmeta", "--option", pair, "--data-root", root,
                          "--run-dir", tmp_path / "r"), "--option", needle, code=2)


def test_nan_of_a_float_option_is_refused_naming_it(root):
    one_line_error(invoke("evaluate", "--baseline", "lp", "tiny", "--refine", "lp", "--refine-alpha", "nan",
                          "--data-root", root), "--refine-alpha", "not a finite number", code=2)


# --------------------------------------------------------------------------- --config


def test_a_key_twice_in_a_json_config_is_refused(root, tmp_path):
    config = tmp_path / "dup.json"
    config.write_text('{"train_config": {"steps": 1, "steps": 2}}')
    one_line_error(invoke("train", "tiny", "--config", config, "--data-root", root), "dup.json", "steps", "twice",
                   code=2)


def test_parallel_steps_from_a_config_is_honoured(root, tmp_path, monkeypatch):
    seen = {}

    def fake_train(data, **kwargs):
        seen.update(kwargs)
        raise GFLError("stopped before training")

    monkeypatch.setattr(gflkit, "train", fake_train)
    config = tmp_path / "serial.json"
    config.write_text(json.dumps({"train_config": {"parallel_steps": False}}))
    invoke("train", "tiny", "--config", config, "--data-root", root, "--run-dir", tmp_path / "r")
    assert seen["train_cfg"].parallel_steps is False
    invoke("train", "tiny", "--config", config, "--parallel-steps", "--data-root", root, "--run-dir", tmp_path / "r")
    assert seen["train_cfg"].parallel_steps is True
