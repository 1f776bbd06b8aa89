"""predict's candidate methods against dense references, structural features, and the rule that picks one."""
from __future__ import annotations

import networkx as nx
import numpy as np
import torch

import gflkit  # noqa: F401  (before dgl)
import dgl  # noqa: E402

from gflkit.data.structure import degree_profile, spectral_coordinates, structural_features, _adjacency  # noqa: E402
from gflkit.graphs import prepare_graph  # noqa: E402
from gflkit.prediction.candidates import (CorrectAndSmooth, LabelPropagation, NearestCentroid,  # noqa: E402
                                          RidgeClassifier, ridge_weights, scaled_features)
from gflkit.prediction.diagnostics import Estimate  # noqa: E402
from gflkit.prediction.selection import MARGIN, ORDER, TOLERANCE, choose, margin, paired_gap  # noqa: E402

EDGES = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (3, 5)]  # two triangles joined by one edge
FEAT = np.array([[1.0, 0.2], [0.9, 0.1], [0.7, 0.4], [0.1, 0.9], [0.2, 1.0], [0.0, 0.8]], dtype=np.float32)


def six_nodes(feat: np.ndarray | None = FEAT) -> dgl.DGLGraph:
    src, dst = zip(*EDGES)
    g = dgl.graph((torch.tensor(src + dst), torch.tensor(dst + src)), num_nodes=6)
    g.ndata["feat"] = torch.from_numpy(FEAT if feat is None else feat)  # label propagation never reads it
    return prepare_graph(g)


def dense_a_hat() -> np.ndarray:
    """``D^-1/2 (A + I) D^-1/2`` of the six-node graph, written out."""
    a = np.eye(6)
    for u, v in EDGES:
        a[u, v] = a[v, u] = 1
    d = a.sum(1) ** -0.5
    return d[:, None] * a * d[None, :]


SUPPORT = [torch.tensor([0]), torch.tensor([5])]


def test_label_propagation_matches_the_dense_iteration():
    a, alpha = dense_a_hat(), 0.9
    y0 = np.full((6, 2), 0.5)
    y0[0], y0[5] = [1, 0], [0, 1]
    y = y0.copy()
    for _ in range(50):
        y = alpha * a @ y + (1 - alpha) * y0
        y[0], y[5] = [1, 0], [0, 1]
    scores = LabelPropagation(alpha, 50).class_scores(six_nodes(None), SUPPORT)
    assert np.allclose(scores.exp().numpy(), y / y.sum(1, keepdims=True), atol=1e-5)
    assert scores.argmax(1).tolist() == [0, 0, 0, 1, 1, 1]


def _unit(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(0)
    return x / np.sqrt((x * x).sum(1).mean())


def test_scaled_and_propagated_features_match_dense_products():
    g = six_nodes()
    assert np.allclose(scaled_features(g, 0).numpy(), _unit(FEAT), atol=1e-6)
    a = dense_a_hat()
    assert np.allclose(scaled_features(g, 2).numpy(), _unit(a @ a @ _unit(FEAT)), atol=1e-5)


def test_nearest_centroid_matches_numpy():
    g = six_nodes()
    support = [torch.tensor([0, 1]), torch.tensor([4, 5])]
    z = _unit(FEAT)
    centres = np.stack([z[[0, 1]].mean(0), z[[4, 5]].mean(0)])
    want = -((z[:, None, :] - centres[None]) ** 2).sum(-1)
    got = NearestCentroid(0).class_scores(g, support)
    assert np.allclose(got.numpy(), want, atol=1e-5) and got.argmax(1).tolist() == [0, 0, 0, 1, 1, 1]


def test_ridge_matches_the_closed_form_in_both_forms():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 3)), np.eye(2)[[0, 1, 0, 1, 1]]
    xs = np.hstack([x, np.ones((5, 1))])
    lam = float((xs * xs).sum(1).mean())
    w = np.linalg.solve(xs.T @ xs + lam * np.eye(4), xs.T @ y)  # primal: (d + 1, C)
    dual, alpha = ridge_weights(torch.from_numpy(x[:3]), torch.from_numpy(y[:3]))  # 3 rows < 4 columns: dual form
    primal, none = ridge_weights(torch.from_numpy(x), torch.from_numpy(y))
    assert none is None and np.allclose(primal.numpy(), w)
    xs3 = xs[:3]
    lam3 = float((xs3 * xs3).sum(1).mean())
    w3 = np.linalg.solve(xs3.T @ xs3 + lam3 * np.eye(4), xs3.T @ y[:3])
    assert np.allclose((dual.T @ alpha).numpy(), w3)  # the dual solution is the primal one
    g = six_nodes()
    got = RidgeClassifier(0).class_scores(g, SUPPORT)
    z = np.hstack([_unit(FEAT), np.ones((6, 1))])
    zs = z[[0, 5]]
    lam = float((zs * zs).sum(1).mean())
    want = z @ np.linalg.solve(zs.T @ zs + lam * np.eye(3), zs.T @ np.eye(2))
    assert np.allclose(got.numpy(), want, atol=1e-5) and got.argmax(1).tolist() == [0, 0, 0, 1, 1, 1]


def test_correct_and_smooth_keeps_the_labels_and_follows_the_graph():
    scores = CorrectAndSmooth().class_scores(six_nodes(), SUPPORT)
    assert scores.argmax(1).tolist() == [0, 0, 0, 1, 1, 1]
    assert np.allclose(scores.exp().sum(1).numpy(), 1, atol=1e-5)


def test_structural_features_against_networkx_and_a_dense_eigendecomposition():
    k = nx.karate_club_graph()
    e = np.array(k.edges())
    a = _adjacency(e[:, 0], e[:, 1], 34)
    profile = degree_profile(a)
    deg = np.array([k.degree(i) for i in range(34)])
    assert np.allclose(profile[:, 0], np.log1p(deg))
    assert np.allclose(profile[:, 1], [np.mean(np.log1p(deg[list(k[i])])) for i in range(34)])
    assert np.allclose(profile[:, 3], [np.max(np.log1p(deg[list(k[i])])) for i in range(34)])
    dense = a.toarray() + np.eye(34)
    d = dense.sum(1) ** -0.5
    values, vectors = np.linalg.eigh(0.5 * (np.eye(34) + d[:, None] * dense * d[None]))
    coords = spectral_coordinates(a, 2, iterations=200)
    for j in range(2):  # the eigenvectors after the first (sqrt(degree + 1)), up to sign and scale
        ref = vectors[:, -2 - j]
        assert abs(np.corrcoef(coords[:, j], ref)[0, 1]) > 0.999
    feat = structural_features(torch.from_numpy(e[:, 0]), torch.from_numpy(e[:, 1]), 34)
    assert feat.shape == (34, 21) and feat.dtype == torch.float32 and torch.isfinite(feat).all()
    again = structural_features(torch.from_numpy(e[::-1, 1].copy()), torch.from_numpy(e[::-1, 0].copy()), 34)
    assert torch.allclose(feat, again, atol=1e-5)  # the edges' order and direction do not matter
    club = np.array([k.nodes[i]["club"] == "Officer" for i in range(34)])
    assert abs(np.corrcoef(feat[:, 5].numpy(), club)[0, 1]) > 0.7  # the first spectral column splits the clubs


def _estimate(hits: list[float], per_class: int = 5) -> Estimate:
    hits = tuple(hits)
    classes = len(hits) // per_class
    recall = {f"c{c}": float(np.mean(hits[c * per_class:(c + 1) * per_class])) for c in range(classes)}
    return Estimate(float(np.mean(hits)), (0.0, 1.0), recall, {f"c{c}": per_class for c in range(classes)},
                    5, 3, 0, hits=hits)


def test_auto_prefers_the_earlier_candidate_within_one_standard_error():
    first, later = ORDER[2], ORDER[3]
    close = {first: _estimate([1, 1, 1, 1, 1, 1, 1, 0, 1, 0]), later: _estimate([1, 1, 1, 1, 1, 1, 0, 1, 1, 1])}
    assert paired_gap(close[later], close[first]) < 1
    chosen, why, gaps = choose(close, [first, later])
    assert chosen == first and "within 1 standard error" in why and gaps[later] == 0
    far = {first: _estimate([1] * 10 + [0] * 10), later: _estimate([1] * 20)}
    chosen, why, _ = choose(far, [first, later])
    assert chosen == later and why == "the best estimate"
    assert choose(close, [first, later], tolerance=0)[0] == later  # the plain maximum
    none = {first: Estimate(None, None, {}, {"a": 1}), later: Estimate(None, None, {}, {"a": 1})}
    assert "no estimate" in choose(none, [first, later])[1]


def test_auto_keeps_the_earlier_candidate_within_a_margin_that_shrinks_with_the_labels():
    first, later = ORDER[0], ORDER[3]
    assert margin(3) == MARGIN and margin(3) > margin(5) > margin(10) > 0
    # 3 labels per class, 4 classes: the later one 16.7 points ahead, more than a standard error
    three = {first: _estimate([1] * 10 + [0] * 2, per_class=3), later: _estimate([1] * 12, per_class=3)}
    assert paired_gap(three[later], three[first]) > TOLERANCE and 1 - 10 / 12 < margin(3)
    chosen, why, _ = choose(three, [first, later])
    assert chosen == first and f"or {100 * margin(3):.1f} points" in why
    assert choose(three, [first, later], margin_of=None)[0] == later  # standard errors alone leave it
    wide = {first: _estimate([1] * 6 + [0] * 6, per_class=3), later: _estimate([1] * 12, per_class=3)}
    assert choose(wide, [first, later])[0] == later  # 50 points ahead: beyond the margin
    # the same shares with 10 labels per class: the margin is small, the later one is chosen
    ten = {first: _estimate(([1] * 8 + [0] * 2) * 4, per_class=10), later: _estimate([1] * 40, per_class=10)}
    assert choose(ten, [first, later])[0] == later


def test_scoring_some_rows_equals_the_rows_of_all():
    g = six_nodes()
    rows = torch.tensor([4, 1])
    for candidate in (NearestCentroid(0), NearestCentroid(2), RidgeClassifier(0), RidgeClassifier(2)):
        assert candidate.scores_rows
        whole = candidate.class_scores(g, SUPPORT)
        assert torch.allclose(candidate.class_scores(g, SUPPORT, nodes=rows), whole[rows], atol=1e-6)


def _random_graph(n: int = 40, edges: int = 90, feats: int = 5, seed: int = 0) -> dgl.DGLGraph:
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (edges,), generator=gen), torch.randint(0, n, (edges,), generator=gen)
    g = dgl.to_simple(dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n))
    g.ndata["feat"] = torch.randn(n, feats, generator=gen)
    return prepare_graph(g)


def test_folds_propagated_side_by_side_score_as_each_fold_alone():
    from gflkit.config import PRESETS
    from gflkit.models.gfl import GFL
    from gflkit.prediction.diagnostics import held_out_folds
    from gflkit.prediction.candidates import RunModel
    from gflkit.refine import RefineConfig

    g = _random_graph()
    support = [torch.arange(0, 6), torch.arange(6, 10), torch.arange(10, 17)]
    rests = [rest for rest, _ in held_out_folds(support, 5, 2, seed=0)]
    torch.manual_seed(0)
    module = GFL(5, PRESETS["protonet"]).eval()
    plain = RunModel(module)
    for candidate in (LabelPropagation(), CorrectAndSmooth(), plain, RunModel(module, RefineConfig("lp"), plain),
                      RunModel(module, RefineConfig("cs"), plain)):
        z = candidate.shared_embeddings(g)
        together = candidate.fold_scores(g, rests, z)
        assert together.shape == (40, len(rests), 3)
        for f, rest in enumerate(rests):  # each fold's scores are the ones it gets alone, to float rounding
            alone = candidate.class_scores(g, rest, z)
            assert torch.allclose(together[:, f], alone, atol=1e-6), candidate.name  # (the same bits here)
            assert torch.equal(together[:, f].argmax(1), alone.argmax(1)), candidate.name


def test_the_estimates_are_the_same_with_the_folds_side_by_side():
    from gflkit.prediction.diagnostics import cross_validate
    from gflkit.prediction.selection import Contender, fold_predictors

    g = _random_graph(seed=1)
    support = [torch.arange(0, 5), torch.arange(5, 12)]
    contenders = [Contender(c, g) for c in (LabelPropagation(), CorrectAndSmooth(), NearestCentroid(2))]
    predicts, batched, batch = fold_predictors(contenders, support)
    assert set(batched) == {"lp", "cs"} and batch >= 15
    one_by_one = cross_validate(predicts, ["a", "b"], support)
    for size in (0, 4):
        together = cross_validate(predicts, ["a", "b"], support, batched=batched, batch=size)
        assert {n: e.hits for n, e in together.items()} == {n: e.hits for n, e in one_by_one.items()}
        assert together == one_by_one
