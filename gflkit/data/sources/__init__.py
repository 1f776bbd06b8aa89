"""Readers of raw public data, one module per format."""
from .base import BadInputReport, SourceGraph

__all__ = ["BadInputReport", "SourceGraph"]
