"""Evaluation: per-graph scoring over episodes (``scoring``), the statistics of
its intervals (``statistics``) and the result tables (``tables``)."""
