"""Package discovery; every other setting is in pyproject.toml.

pyproject.toml maps the top-level ``cli/`` folder to the ``gflkit_cli`` package.
setuptools' declarative ``find`` cannot follow that mapping, so the packages are
found here: every folder under ``gflkit/`` (data folders such as ``resources``
included), and every package under ``cli/`` renamed into ``gflkit_cli``. A new
subpackage is therefore never left out of the wheel.
"""
from setuptools import find_namespace_packages, find_packages, setup

PACKAGES = ["gflkit", *(f"gflkit.{p}" for p in find_namespace_packages("gflkit", exclude=["*__pycache__*"]))]
PACKAGES += ["gflkit_cli", *(f"gflkit_cli.{p}" for p in find_packages("cli"))]

setup(packages=PACKAGES)
