"""Planetoid (Cora, Citeseer, Pubmed) and LINQS Pubmed-Diabetes readers."""
from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import gflkit  # noqa: F401  (before dgl)
from gflkit.data.sources.planetoid import read_linqs_pubmed, read_planetoid, read_pubmed
from gflkit.errors import GFLError

LINQS = Path(__file__).resolve().parents[2] / "data" / "samples" / "pubmed_linqs"


def test_cora_numbers(shared_data):
    src = read_planetoid(shared_data / "planetoid", "cora")
    g = src.g
    assert g.num_nodes() == 2708 and g.ndata["feat"].shape == (2708, 1433)
    assert len(src.classes) == 7 and g.num_edges() == 2 * 5278
    assert int((g.ndata["label"] < 0).sum()) == 0 and src.meta["padding_rows"] == 0 and not src.report


def test_citeseer_test_rows_are_placed_and_gaps_padded(shared_data):
    folder = shared_data / "planetoid"
    src = read_pubmed(folder, "citeseer")
    g = src.g
    assert g.num_nodes() == 3327 and g.ndata["feat"].shape == (3327, 3703) and len(src.classes) == 6
    assert src.meta["padding_rows"] == 15
    with open(folder / "ind.citeseer.tx", "rb") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tx = pickle.load(f, encoding="latin1")
    first = int((folder / "ind.citeseer.test.index").read_text().split()[0])
    assert np.array_equal(g.ndata["feat"][first].numpy(), tx[0].toarray()[0])
    padded = (g.ndata["feat"].abs().sum(1) == 0) & (g.ndata["label"] == -1)
    assert int(padded.sum()) == 15 and int(g.in_degrees()[padded].min()) >= 1  # gap rows keep their edges


def test_linqs_sample_and_bad_lines():
    src = read_linqs_pubmed(LINQS)
    g = src.g
    assert src.classes == ["1", "2", "3"] and g.num_nodes() == 12 and g.num_edges() == 2 * 9
    assert g.ndata["feat"].shape == (12, 6) and abs(float(g.ndata["feat"][0, 0]) - 0.09) < 1e-6
    assert g.ndata["label"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, -1, 1]
    report = src.report.as_dict()
    assert report["label outside the class set"] == {"count": 1, "first": [13]}
    assert report["citation of unknown paper"]["count"] == 1
    assert report["malformed citation line"]["count"] == 1
    assert report["undeclared word or non-numeric weight"]["count"] == 2
    assert read_pubmed(LINQS).source == "linqs"  # no Planetoid files there: the LINQS layout is read


def test_missing_planetoid_files_say_where_to_download(tmp_path):
    with pytest.raises(GFLError) as err:
        read_pubmed(tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and "ind.pubmed.x" in msg and "kimiyoung/planetoid" in msg and "Pubmed-Diabetes.tgz" in msg
