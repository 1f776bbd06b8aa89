"""Where early stopping ends a run, replayed from its stored validation curve, for several patiences.

    python scripts/gmeta_budget.py results/gmeta/synthetic-small_curve.csv results/gmeta/facebook_curve.csv [--markdown]

A curve is the ``step, loss, val_accuracy`` rows of a run's validation rounds
(``metrics.csv`` of a run folder trained with a budget and a patience large
enough not to stop it early). The training loop keeps the weights of the best
round and stops after ``patience`` rounds without gain; that rule is replayed
on the curve for each ``--patience`` (a run with that patience takes the same
steps up to its stop: patience changes only when it stops). One row per
(curve, patience): the step it stops at, the step and val accuracy of the
weights it keeps, and the best round within 400 steps (the shared budget).
``--test LABEL=CSV`` adds the test rows of runs (``gflkit train`` output).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch

from gflkit.training.loop import LoopState


def replay(curve: pd.DataFrame, patience: int) -> dict:
    """The training loop's early stopping on ``curve`` (rounds in step order), counted by the loop's own
    :class:`~gflkit.training.loop.LoopState` (a tie is no gain)."""
    state, nothing, stop = LoopState(), torch.nn.Module(), None  # no weights to keep: the rounds alone
    for step, val in zip(curve["step"], curve["val_accuracy"]):
        state.record(nothing, int(step), val)
        if state.stale >= patience:
            stop = int(step)
            break
    return {"stop_step": stop if stop is not None else int(curve["step"].iloc[-1]), "stopped_early": stop is not None,
            "best_step": state.best_step, "best_val": 100 * state.best_val}


def main(argv: list[str] | None = None) -> None:
    """Print the CSV of the replayed stops."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("curves", nargs="+", type=Path)
    parser.add_argument("--patience", default="8,15,20,25", help="patiences to replay, comma-separated")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table instead of the CSV")
    parser.add_argument("--test", action="append", default=[], metavar="LABEL=CSV",
                        help="with --markdown: a result row of gflkit train to list after the table (repeatable)")
    args = parser.parse_args(argv)
    rows = []
    for path in args.curves:
        curve = pd.read_csv(path).sort_values("step")
        within = curve[curve["step"] <= 400]
        first = within.loc[within["val_accuracy"].idxmax()]
        for patience in (int(p) for p in args.patience.split(",")):
            rows.append({"curve": path.name, "last_step": int(curve["step"].iloc[-1]), "patience": patience,
                         **replay(curve, patience), "best_step_within_400": int(first["step"]),
                         "best_val_within_400": 100 * first["val_accuracy"]})
    table = pd.DataFrame(rows)
    if not args.markdown:
        table.to_csv(sys.stdout, index=False, float_format="%.2f")
        return
    print("| curve (last step) | patience | stops at | kept: step, val accuracy | best within 400 steps |")
    print("|---|---|---|---|---|")
    for r in table.itertuples():
        name = r.curve.removesuffix("_curve.csv")
        print(f"| {name} ({r.last_step}) | {r.patience} | {r.stop_step if r.stopped_early else 'not stopped'} "
              f"| {r.best_step}, {r.best_val:.2f} | {r.best_step_within_400}, {r.best_val_within_400:.2f} |")
    if args.test:
        print("\n| run | test accuracy |\n|---|---|")
        for item in args.test:
            label, _, path = item.partition("=")
            row = pd.read_csv(path).iloc[0]
            print(f"| {label} | {row['accuracy']:.2f} ± {row['ci95']:.2f} |")


if __name__ == "__main__":
    main()
