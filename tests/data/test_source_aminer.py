"""AMiner dump reader, venue matching, text features and `gflkit preprocess aminer`."""
from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import pytest
import torch

import gflkit  # noqa: F401  (before dgl)
from gflkit.data import GraphCollection
from gflkit.data.sources.aminer import read_aminer
from gflkit.data.sources.text_features import HashedText, tokenize, truncated_svd
from gflkit.data.sources.venues import VenueMap
from gflkit.errors import GFLError

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "samples" / "aminer_sample.txt"
TWO = ["data_mining", "databases"]

TINY = """#* Mining frequent patterns
#@ Ann A, Bob B
#t 2001
#c KDD
#index 1

#* Clustering graphs
#@ Ann A, Bob B, Cai C
#c ICDM
#index 2
#% 1

#* Storage engines
#@ Bob B;Ann A
#c VLDB
#index 3
#% 2
#% 77

#* Query plans
#@ Cai C
#c SIGMOD Conference
#index 4

#* Notes on writing
#@ Dan D, Ann A
#c Journal of Irreproducible Results
#index 5
#% 5
"""


def _tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.txt"
    path.write_text(TINY, encoding="utf-8")
    return path


def _weights(g) -> dict[tuple[int, int], float]:
    u, v = g.edges()
    return {(int(a), int(b)): float(w) for a, b, w in zip(u, v, g.edata["weight"]) if a < b}


def test_collaboration_weights_and_majority_labels(tmp_path):
    src = read_aminer(_tiny(tmp_path), classes=TWO, n_buckets=512)
    g = src.g
    assert src.classes == TWO and src.name == "collaboration" and g.num_nodes() == 4  # Ann, Bob, Cai, Dan
    assert _weights(g) == {(0, 1): 3.0, (0, 2): 1.0, (1, 2): 1.0, (0, 3): 1.0}
    assert torch.equal(g.edata["weight"][g.edge_ids(1, 0)], torch.tensor(3.0))  # both directions carry it
    # Ann and Bob: 2 mining, 1 database paper; Cai: a 1-1 tie -> data_mining (sorts first); Dan: unmapped only
    assert g.ndata["label"].tolist() == [0, 0, 0, -1]
    assert g.ndata["feat"].shape == (4, 128) and g.ndata["feat"].dtype == torch.float32


def test_citation_edges_labels_and_bad_references(tmp_path):
    src = read_aminer(_tiny(tmp_path), task="citation", classes=TWO, n_buckets=512)
    g = src.g
    assert g.num_nodes() == 5 and g.ndata["feat"].shape == (5, 100)
    u, v = g.edges()
    assert sorted((int(a), int(b)) for a, b in zip(u, v) if a < b) == [(0, 1), (1, 2)]
    assert g.ndata["label"].tolist() == [0, 0, 1, 1, -1]  # unmapped venue stays, unlabelled
    report = src.report.as_dict()
    assert report["reference to unknown paper"] == {"count": 1, "first": [18]}
    assert report["paper citing itself"] == {"count": 1, "first": [29]}


def test_sample_counts_and_malformed_records():
    collab = read_aminer(SAMPLE, n_buckets=2048)
    assert collab.g.num_nodes() == 53 and collab.meta["papers"] == 91
    assert collab.classes == ["data_mining", "databases", "machine_learning", "natural_language_processing"]
    report = collab.report.as_dict()
    assert report["record without #index"]["first"] == [366]
    assert report["non-numeric #index"]["first"] == [371]
    assert report["non-numeric year (#t)"]["first"] == [379]
    assert report["paper without authors (#@)"]["first"] == [724]
    assert report["duplicate #index"]["first"] == [730]
    assert report["bad encoding (bytes replaced)"]["first"] == [736]
    cite = read_aminer(SAMPLE, task="citation", n_buckets=2048)
    assert cite.g.num_nodes() == 91 and len(cite.classes) == 3
    assert cite.meta["papers_unmapped_venue"] == 7
    assert cite.report.as_dict()["reference to unknown paper"]["first"] == [382]
    assert int((cite.g.ndata["label"] == -1).sum()) > 7  # unmapped venues and fields outside the top 3


def test_features_are_deterministic(tmp_path):
    a = read_aminer(_tiny(tmp_path), task="citation", classes=TWO, n_buckets=512, feat_size=3)
    b = read_aminer(_tiny(tmp_path), task="citation", classes=TWO, n_buckets=512, feat_size=3)
    assert torch.equal(a.g.ndata["feat"], b.g.ndata["feat"]) and a.g.ndata["feat"].abs().sum() > 0
    text = HashedText(64)
    text.add("Graph graph mining of the graphs")
    m = text.matrix()
    assert tokenize("Graph graph mining of the 2008 graphs") == ["graph", "graph", "mining", "graphs"]
    assert m[0, zlib.crc32(b"graph") % 64] >= 2  # crc32 buckets, stable across runs


def test_truncated_svd_matches_exact_top_component():
    rng = np.random.default_rng(0)
    x = rng.random((40, 30)) * (rng.random((40, 30)) < 0.2)
    x[:, 0] += 5.0  # a dominant direction
    emb = truncated_svd(sp.csr_matrix(x), 4, seed=1)
    u, s, _ = np.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(np.abs(emb[:, 0]), np.abs(u[:, 0] * s[0]), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(emb, truncated_svd(sp.csr_matrix(x), 4, seed=1))  # reproducible
    assert truncated_svd(x[:2], 4).shape == (2, 4)  # fewer components than asked: zero columns
    assert not truncated_svd(x[:2], 4)[:, 2:].any()


def test_truncated_svd_keeps_small_singular_values():
    # Singular values from 1 down to 1e-9: squaring them (eigenvalues of X^T X)
    # would push the smallest below double precision and lose them.
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.standard_normal((80, 12)))
    v, _ = np.linalg.qr(rng.standard_normal((60, 12)))
    s = np.logspace(0, -9, 12)
    emb = truncated_svd((u * s) @ v.T, 12, seed=1).astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=0), s, rtol=1e-6)
    np.testing.assert_allclose(np.abs(u.T @ (emb / s)), np.eye(12), atol=1e-6)


def test_venue_matching_is_lenient(tmp_path):
    venues = VenueMap.load()
    assert venues.field("Proceedings of the 14th ACM SIGKDD international conference on Knowledge "
                        "discovery and data mining") == "data_mining"
    assert venues.field("Proc. VLDB Endow. (PVLDB)") == "databases"
    assert venues.field("  sigmod   CONFERENCE ") == "databases"
    assert venues.field("Proceedings of the 25th international conference on Machine learning") == "machine_learning"
    assert venues.field("Journal of Irreproducible Results") is None
    table = tmp_path / "map.csv"
    table.write_text("venue,field\nJournal of Irreproducible Results,humour\nKDD,mining\n", encoding="utf-8")
    src = read_aminer(_tiny(tmp_path), task="citation", venue_map=table, num_classes=2, n_buckets=512)
    assert src.classes == ["humour", "mining"] and src.g.ndata["label"].tolist() == [1, -1, -1, -1, 0]


def test_missing_dump_is_one_line(tmp_path):
    with pytest.raises(GFLError) as err:
        read_aminer(tmp_path / "raw" / "aminer")
    msg = str(err.value)
    assert "\n" not in msg and "AMiner-Paper.txt" in msg and "aminer.org/citation" in msg
    assert str(tmp_path / "raw" / "aminer") in msg


@pytest.mark.slow
def test_cli_preprocess_aminer_end_to_end(tmp_path):
    from click.testing import CliRunner

    from gflkit_cli.main import cli

    (tmp_path / "raw" / "aminer").mkdir(parents=True)
    shutil.copy(SAMPLE, tmp_path / "raw" / "aminer" / "AMiner-Paper.txt")
    args = ["preprocess", "aminer", "--data-root", str(tmp_path), "--graphs", "2,1,1", "--walk-length", "20,40",
            "--min-degree", "1", "--seed", "3"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    coll = GraphCollection.load(tmp_path / "processed" / "collaboration")
    assert len(coll) == 4 and coll.feat_size == 128 and coll.num_classes == 4 and coll.source == "aminer"
    manifest = json.loads((tmp_path / "processed" / "collaboration" / "manifest.json").read_text())
    assert manifest["meta"]["bad_input"]["duplicate #index"] == {"count": 1, "first": [730]}
    # the text transform is saved with the collection, so new text lands in the same space
    from gflkit.data.transform import feature_fingerprint, load_transform

    saved = load_transform(tmp_path / "processed" / "collaboration")
    assert saved is not None and saved.kind == "tfidf-svd" and saved.out_feats == 128
    assert manifest["meta"]["feature_transform"]["id"] == saved.id
    assert feature_fingerprint(coll)["transform"] == saved.id
    missing = CliRunner().invoke(cli, ["preprocess", "aminer", "--data-root", str(tmp_path / "empty")])
    assert missing.exit_code == 1 and "no such file" in missing.output
