"""Start-up: the command line's help never loads torch or DGL, and the compat layer still runs first."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gflkit import names

HEAVY = ("torch", "dgl", "pandas", "numpy", "scipy")


def _fresh(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_the_command_line_loads_no_heavy_module():
    out = _fresh(f"""
        import json, sys
        import gflkit_cli.main
        print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
    """)
    assert out == []


def test_help_of_every_command_loads_no_heavy_module():
    out = _fresh(f"""
        import json, sys
        from click.testing import CliRunner
        from gflkit_cli.main import cli
        bad = []
        def walk(group, path):
            for name, cmd in group.commands.items():
                result = CliRunner().invoke(cli, [*path, name, "--help"])
                if result.exit_code != 0:
                    bad.append([*path, name, result.output])
                if hasattr(cmd, "commands"):
                    walk(cmd, [*path, name])
        walk(cli, [])
        print(json.dumps({{"bad": bad, "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
    """)
    assert out == {"bad": [], "heavy": []}


def test_version_without_torch():
    out = _fresh("""
        import json, sys
        import gflkit
        print(json.dumps({"version": gflkit.__version__, "torch": "torch" in sys.modules}))
    """)
    assert out["version"] and out["torch"] is False


@pytest.mark.slow
def test_compat_runs_on_the_first_import_of_dgl_after_gflkit():
    out = _fresh("""
        import json, sys
        import gflkit
        from gflkit import _compat
        armed_before = _compat.armed()
        import dgl
        print(json.dumps({"armed_before": armed_before, "armed_after": _compat.armed(),
                          "backend": dgl.backend.backend_name,
                          "graphbolt": _compat.patched["graphbolt"],
                          "available": _compat.graphbolt_library_available()}))
    """)
    assert out["armed_before"] and not out["armed_after"]
    assert out["backend"] == "pytorch"
    assert out["graphbolt"] is (not out["available"])


def test_lazy_attributes_resolve_and_unknown_ones_raise():
    import pytest

    import gflkit

    assert callable(gflkit.train) and gflkit.GFLConfig().hops == 3
    assert set(gflkit.__all__) <= set(dir(gflkit))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        gflkit.nonexistent  # noqa: B018


def test_names_and_defaults_are_defined_once():
    """Each name list and default is written in gflkit.names only; the modules that implement it use that object."""
    from gflkit.api import model_names
    from gflkit.config import PRESETS
    from gflkit.data import DEFAULT_COLLECTION
    from gflkit.data.sampling import METHODS
    from gflkit.data.sources.table_features import FEATURE_KEYS
    from gflkit.experiments import SWEEP_PARAMS
    from gflkit.plotting import FORMATS
    from gflkit.refine import REFINE_METHODS, RefineConfig
    from gflkit.training.meta import CHECKPOINT_EVERY

    assert names.GFL_MODELS == tuple(PRESETS)
    assert model_names is names.model_names
    assert METHODS is names.SAMPLING_METHODS and REFINE_METHODS is names.REFINE_METHODS
    assert (RefineConfig().alpha, RefineConfig().steps) == (names.REFINE_ALPHA, names.REFINE_STEPS)
    assert FORMATS is names.FIGURE_FORMATS and FEATURE_KEYS is names.FEATURE_KEYS
    assert CHECKPOINT_EVERY is names.CHECKPOINT_EVERY and DEFAULT_COLLECTION is names.DEFAULT_COLLECTION
    assert tuple(SWEEP_PARAMS) == names.SWEEP_PARAM_NAMES  # the table of how each is parsed, in the same order


def test_importing_gflkit_and_the_command_line_leaves_the_allocator_alone():
    """Only the command's entry sets glibc's thresholds: importing the library (or the command's modules) does not."""
    out = _fresh("""
        import ctypes, json
        calls = []
        class Recording(ctypes.CDLL):
            def __getattr__(self, name):
                if name == "mallopt":
                    calls.append(name)
                return super().__getattr__(name)
        ctypes.CDLL = Recording
        import gflkit, gflkit.api, gflkit.training
        import gflkit_cli.main
        print(json.dumps(calls))
    """)
    assert out == []


def test_the_command_entry_sets_glibc_thresholds_unless_told_not_to(monkeypatch):
    import gflkit_cli.main
    from gflkit_cli import process

    calls = []
    monkeypatch.setattr(process, "_mallopt", lambda param, value: calls.append((param, value)) or True)
    monkeypatch.setattr(process, "on_glibc", lambda: True)
    for name in (*process.GLIBC_VARIABLES, process.OPT_OUT):
        monkeypatch.setenv(name, "")  # recorded, so that what the entry sets is undone after the test
        monkeypatch.delenv(name)
    monkeypatch.setattr(sys, "argv", ["gflkit", "--help"])
    with pytest.raises(SystemExit):
        gflkit_cli.main.main()
    assert calls == [(process.M_TRIM_THRESHOLD, process.TRIM_BYTES), (process.M_MMAP_THRESHOLD, process.MMAP_BYTES)]
    # the processes it spawns (--jobs, --nproc) get the same settings through glibc's variables
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == str(process.TRIM_BYTES)

    calls.clear()
    monkeypatch.setenv(process.OPT_OUT, "1")
    for name in process.GLIBC_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit):
        gflkit_cli.main.main()
    assert calls == []


def test_python_dash_m_gflkit_configures_the_process_as_the_command_does(monkeypatch):
    import gflkit.__main__
    from gflkit_cli import process

    calls = []
    monkeypatch.setattr(process, "configure_process", lambda: calls.append("configured"))
    monkeypatch.setattr(sys, "argv", ["gflkit", "--help"])
    with pytest.raises(SystemExit):
        gflkit.__main__.main()
    assert calls == ["configured"]


def test_a_users_glibc_variable_wins_and_an_unknown_libc_is_left_alone(monkeypatch):
    from gflkit_cli import process

    calls = []
    monkeypatch.setattr(process, "_mallopt", lambda param, value: calls.append((param, value)) or True)
    monkeypatch.delenv(process.OPT_OUT, raising=False)
    monkeypatch.setattr(process, "on_glibc", lambda: True)
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")
    assert process.configure_process() is False
    monkeypatch.delenv("GLIBC_TUNABLES")
    for name in process.GLIBC_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(process, "on_glibc", lambda: False)
    assert process.configure_process() is False
    assert calls == []

