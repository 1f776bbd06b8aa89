"""Margins for predict's rule compared offline, from the stored records of ``scripts/predict_candidates.py``.

``auto`` leaves an earlier candidate of the fixed order only when the best
estimate is more than one paired standard error and more than a margin ahead
of it (:func:`gflkit.prediction.selection.margin`). The stored records hold
every candidate's balanced estimate and the one-standard-error rule's pick, so
any margin can be replayed without measuring again
(:func:`predict_candidates.with_auto`). For each margin, a constant ``c``
that is kept flat, falls as ``3 / k`` or as ``(3 / k)^2`` with ``k`` labels
per class: the mean and worst regret over the cells (family and labels per
class, 3 or more) of ``results/predict`` and ``results/predict/seed1``, auto
minus the run's model on the default family with 3 labels per class (both
seeds, 95% t interval), and on the tutorial's two graphs
(``results/predict/draws``) the draws within 5 points of the best candidate
and the mean regret.

    python scripts/predict_margins.py > results/predict/margins.md
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from predict_candidates import against_the_run, summarise, with_auto  # noqa: E402
from predict_draws import per_draw  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "predict"
FORMS = {"flat": lambda c, k: c, "3/k": lambda c, k: c * 3 / k, "(3/k)^2": lambda c, k: c * (3 / k) ** 2}
CONSTANTS = (0.0, 0.1, 0.15, 0.2, 0.25)


def replay(path: Path, margin_of) -> pd.DataFrame:
    """The records of ``path`` with ``pick_auto`` replayed with ``margin_of``."""
    return with_auto(pd.read_csv(path / "records.csv").round(4), margin_of)


def row(form: str, c: float) -> dict:
    """One margin's measurements."""
    def margin_of(k: int) -> float:
        return FORMS[form](c, k)

    out = {"margin": f"{100 * c:g} points" + ("" if form == "flat" or c == 0 else f" x {form}")}
    cells = pd.concat([summarise(replay(RESULTS / d, margin_of))[0] for d in ("", "seed1")])
    cells = cells[cells["shots"] >= 3]["regret_auto"]
    out.update({"mean regret": f"{100 * cells.mean():.1f}", "worst cell": f"{100 * cells.max():.1f}"})
    for seed, d in (("0", "default"), ("1", "default/seed1")):
        p = against_the_run(replay(RESULTS / d, margin_of)).set_index("shots").loc[3]
        out[f"default, 3 labels, seed {seed}"] = (f"{100 * p['delta']:+.1f} [{100 * p['low']:+.1f}, "
                                                  f"{100 * p['high']:+.1f}]")
    draws = per_draw(replay(RESULTS / "draws", margin_of))
    for family, d in draws.groupby("family"):
        out[family] = f"{int(d['within'].sum())} of {len(d)}, {d['regret'].mean():.1f}"
    return out


def main() -> None:
    """Print the table."""
    rows = [row("flat", 0.0)] + [row(form, c) for form in FORMS for c in CONSTANTS if c]
    table = pd.DataFrame(rows)
    head = list(table.columns)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in table.itertuples(index=False)]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
