"""``python -m gflkit``: the command line (for torchrun ... -m gflkit)."""
from gflkit_cli.main import cli

cli(prog_name="gflkit")
