"""Coverage of 95% intervals on simulated comparisons with known seed, graph and episode variance.

    python scripts/coverage.py [--sims 2000] [--scenario seed-dominant ...] > coverage.csv
    python scripts/coverage.py --table coverage.csv [--value delta|accuracy]

Each simulated comparison scores two models with S training seeds on G test
graphs, E support draws (episodes) per graph, in percent:

    acc_m[s, g, e] = 70 + delta_m + a_m[s] + b[g] + beta_m[g] + c_m[s, g] + eta[s, g, e] + eps_m[s, g, e]

``a_m`` is a seed's effect on model m, shared by every graph (training
randomness); ``b`` a graph's difficulty, shared by the models; ``beta_m`` how the
graph suits model m; ``c_m`` the seed x graph interaction; ``eta`` a support
draw's difficulty, shared by the models (they see the same episodes); ``eps_m``
the rest of the episode noise. The true difference is ``delta_1 - delta_0`` (1
point) and the true accuracy of model 1 is 71.

For every method and design the script prints the share of simulations whose
95% interval covers the truth, for the paired difference (``delta``) and for
model 1's accuracy (``accuracy``):

* ``two-level t`` (gflkit's ``--ci t``): :func:`gflkit.evaluation.statistics.two_level_half`;
* ``satterthwaite``: the ANOVA estimate of the mean's variance with one t
  quantile on Satterthwaite's degrees of freedom;
* ``crossed bootstrap``: percentile interval of the mean over resampled seeds
  and graphs (seed and graph indices drawn independently, with replacement);
* ``episodes (old)``: gflkit's former interval: seeds averaged per (graph,
  episode), a t interval over the G x E (graph, episode) pairs.

``--table CSV`` prints a stored output as a Markdown table (one row per
design, one column per method, coverage in percent), simulating nothing.

tests/evaluation/test_inference.py runs the same simulation for the two-level interval and
the old one.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

from gflkit.evaluation.statistics import two_level_half

TRUE_DELTA = 1.0
BASE = 70.0


@dataclass(frozen=True)
class Scenario:
    """Standard deviations (percentage points) of the simulated effects."""

    seed_sd: float = 1.5  # a_m: a seed's effect on one model, shared by the graphs
    graph_sd: float = 1.0  # beta_m: how a graph suits one model
    interaction_sd: float = 1.0  # c_m: seed x graph
    episode_sd: float = 4.0  # eps_m: one model's noise on one support draw
    common_graph_sd: float = 5.0  # b: a graph's difficulty, shared by the models
    common_episode_sd: float = 3.0  # eta: a support draw's difficulty, shared by the models


#: Named scenarios; ``seed-dominant`` has the largest share of variance in the seed, as measured runs do.
SCENARIOS = {
    "seed-dominant": Scenario(),
    "seed-large": Scenario(seed_sd=3.0, graph_sd=0.5, interaction_sd=0.5, episode_sd=2.0),
    "seed-small": Scenario(seed_sd=0.3),
    "graph-dominant": Scenario(seed_sd=0.5, graph_sd=3.0, interaction_sd=0.5, episode_sd=2.0),
    "interaction-dominant": Scenario(seed_sd=0.5, graph_sd=0.5, interaction_sd=3.0, episode_sd=2.0),
    "episode-dominant": Scenario(seed_sd=0.5, graph_sd=0.5, interaction_sd=0.5, episode_sd=10.0),
}


def simulate(n_sims: int, n_seeds: int, n_graphs: int, n_episodes: int, scenario: Scenario = Scenario(),
             rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Accuracies (percent) of model 1 and of the reference model 0, each ``(n_sims, S, G, E)``.

    With one seed, pass a scenario with ``seed_sd=0`` for an interval whose
    target does not include training randomness.
    """
    rng = rng or np.random.default_rng(0)
    shape = (n_sims, n_seeds, n_graphs, n_episodes)
    sc = scenario
    common = (rng.normal(0, sc.common_graph_sd, (n_sims, 1, n_graphs, 1))
              + rng.normal(0, sc.common_episode_sd, shape))

    def model(delta: float) -> np.ndarray:
        return (BASE + delta + common
                + rng.normal(0, sc.seed_sd, (n_sims, n_seeds, 1, 1))
                + rng.normal(0, sc.graph_sd, (n_sims, 1, n_graphs, 1))
                + rng.normal(0, sc.interaction_sd, (n_sims, n_seeds, n_graphs, 1))
                + rng.normal(0, sc.episode_sd, shape))

    return model(TRUE_DELTA), model(0.0)


def episodes_half(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The former interval: seeds averaged per (graph, episode), t over the G x E pairs. ``values[..., S, G, E]``."""
    from scipy.special import stdtrit

    pairs = values.mean(axis=-3).reshape(*values.shape[:-3], -1)
    n = pairs.shape[-1]
    return pairs.mean(axis=-1), stdtrit(n - 1, 0.975) * pairs.std(axis=-1, ddof=1) / np.sqrt(n)


def satterthwaite_half(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ANOVA variance of the mean, ``(MS_S + MS_G - MS_R) / SG`` (at least ``MS_R / SG``), t on Satterthwaite's df."""
    from scipy.special import stdtrit

    n_seeds, n_graphs = cells.shape[-2:]
    mean = cells.mean(axis=(-2, -1))
    seed_means, graph_means = cells.mean(axis=-1), cells.mean(axis=-2)
    ms_s = n_graphs * seed_means.var(axis=-1, ddof=1)
    ms_g = n_seeds * graph_means.var(axis=-1, ddof=1)
    resid = cells - seed_means[..., :, None] - graph_means[..., None, :] + mean[..., None, None]
    df_r = (n_seeds - 1) * (n_graphs - 1)
    ms_r = (resid ** 2).sum(axis=(-2, -1)) / df_r
    combined = np.maximum(ms_s + ms_g - ms_r, ms_r)
    df = combined ** 2 / (ms_s ** 2 / (n_seeds - 1) + ms_g ** 2 / (n_graphs - 1) + ms_r ** 2 / df_r)
    return mean, stdtrit(df, 0.975) * np.sqrt(combined / (n_seeds * n_graphs))


def crossed_bootstrap(cells: np.ndarray, resamples: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval (lo, hi) of the mean over seeds and graphs resampled independently. ``cells[N, S, G]``."""
    n_seeds, n_graphs = cells.shape[-2:]
    rng = np.random.default_rng(seed)
    w_seeds = rng.multinomial(n_seeds, np.full(n_seeds, 1 / n_seeds), size=resamples) / n_seeds
    w_graphs = rng.multinomial(n_graphs, np.full(n_graphs, 1 / n_graphs), size=resamples) / n_graphs
    means = np.einsum("bs,nsg,bg->nb", w_seeds, cells, w_graphs)
    lo, hi = np.percentile(means, [2.5, 97.5], axis=1)
    return lo, hi


def coverage(n_sims: int, n_seeds: int, n_graphs: int, n_episodes: int, scenario: Scenario,
             seed: int = 0, bootstrap: bool = True) -> dict[str, dict[str, float]]:
    """Coverage of each method, for the paired difference and for model 1's accuracy."""
    row, ref = simulate(n_sims, n_seeds, n_graphs, n_episodes, scenario, np.random.default_rng(seed))
    out: dict[str, dict[str, float]] = {}
    for what, values, truth in (("delta", row - ref, TRUE_DELTA), ("accuracy", row, BASE + TRUE_DELTA)):
        cells = values.mean(axis=-1)
        found = {"two-level t": two_level_half(cells), "episodes (old)": episodes_half(values)}
        if n_seeds > 1 and n_graphs > 1:
            found["satterthwaite"] = satterthwaite_half(cells)
        for name, (mean, half) in found.items():
            out.setdefault(name, {})[what] = float(np.mean(np.abs(mean - truth) <= half))
        if bootstrap:
            lo, hi = crossed_bootstrap(cells)
            out.setdefault("crossed bootstrap", {})[what] = float(np.mean((lo <= truth) & (truth <= hi)))
    return out


#: ``--table``'s columns: the methods as the CSV names them, and their headers.
METHODS = {"two-level t": "two-level t (gflkit)", "satterthwaite": "Satterthwaite",
           "crossed bootstrap": "crossed bootstrap", "episodes (old)": "former (graph, episode) pairs"}


def table(path: str, value: str = "delta") -> str:
    """A stored output of this script as Markdown: a row per design (seeds x graphs), a column per method."""
    import pandas as pd

    df = pd.read_csv(path)
    lines = ["| seeds × graphs | " + " | ".join(METHODS.values()) + " |", "|---|" + "---|" * len(METHODS)]
    for (seeds, graphs), d in df.groupby(["seeds", "graphs"], sort=False):
        cells = [d.loc[d["method"] == m, value] for m in METHODS]
        name = f"{seeds} × {graphs}" + (" (no seed variance)" if seeds == 1 else "")
        lines.append(f"| {name} | " + " | ".join(f"{100 * c.iloc[0]:.1f}%" if len(c) else "" for c in cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    """Parse the command line and print the coverage of each design."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sims", type=int, default=2000)
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--scenario", nargs="*", default=list(SCENARIOS), choices=list(SCENARIOS))
    p.add_argument("--designs", default="1x20,3x20,3x6,5x20,10x20", help="SEEDSxGRAPHS,...")
    p.add_argument("--table", default=None, metavar="CSV", help="print this stored output as Markdown")
    p.add_argument("--value", choices=("delta", "accuracy"), default="delta", help="with --table: which coverage")
    a = p.parse_args(argv)
    if a.table:
        sys.stdout.write(table(a.table, a.value))
        return
    designs = [tuple(int(x) for x in d.split("x")) for d in a.designs.split(",")]
    print("scenario,seeds,graphs,method,delta,accuracy")
    for name in a.scenario:
        for n_seeds, n_graphs in designs:
            scenario = SCENARIOS[name]
            if n_seeds == 1:  # one seed: the interval's target is this seed's training; no seed variance
                scenario = Scenario(**{**scenario.__dict__, "seed_sd": 0.0})
            for method, cov in coverage(a.sims, n_seeds, n_graphs, a.episodes, scenario).items():
                print(f"{name},{n_seeds},{n_graphs},{method},{cov['delta']:.3f},{cov['accuracy']:.3f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
