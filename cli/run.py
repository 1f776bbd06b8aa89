"""Placeholder while the train/evaluate commands are written."""
COMMANDS = []
