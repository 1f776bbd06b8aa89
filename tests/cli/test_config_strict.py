"""``--config FILE`` is as strict as the options it stands for.

A settings file is a regular file of at most 4 MiB, nested a few levels; its
sections and keys exist (else the closest valid name is suggested); each value
goes through the type of the option of the same name, as the command line
gives it. Anything else is one usage-error line (exit 2) naming the file and
the key, never a traceback or an "unexpected" error. Hypothesis feeds random
JSON and TOML (nested structures, keys, values, bytes) to the same path.
"""
from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

import pytest
from cli_helpers import invoke, one_line_error
from gflkit_cli.experiments import compare
from gflkit_cli.options import SETTINGS_MAX_BYTES, SETTINGS_MAX_DEPTH, read_settings
from gflkit_cli.run import train
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gflkit.config import EpisodeConfig, GFLConfig, TrainConfig
from gflkit.runs.checkpoints import RUN_RECORD_KEYS


def _file(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def _refused(path: Path, *needles: str, command: str = "train") -> str:
    """The one usage-error line of ``gflkit COMMAND --config PATH``: exit 2, naming the file and ``needles``."""
    line = one_line_error(invoke(command, "--config", path), str(path), *needles, code=2)
    assert line.startswith("Error: Invalid value for '--config': ") and "unexpected" not in line
    return line


# -- what the file is -------------------------------------------------------------------------------------

def _cli_bounded(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``gflkit ARGS`` in a process of at most 1 GiB of address space and ``timeout`` seconds."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "gflkit", *args], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.slow
def test_dev_zero_is_refused_without_being_read():
    done = _cli_bounded("train", "--config", "/dev/zero")
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert errors == [("Error: Invalid value for '--config': /dev/zero: not a regular file; give a run's "
                       "config.json or a .toml settings file")]


@pytest.mark.slow
def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "settings.toml"
    os.mkfifo(fifo)
    done = _cli_bounded("train", "--config", str(fifo), timeout=60)
    assert done.returncode == 2 and f"{fifo}: not a regular file" in done.stderr, done.stderr


def test_a_file_over_the_size_limit_is_refused(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: no 4 MiB written
        f.truncate(SETTINGS_MAX_BYTES + 1)
    _refused(big, "larger than 4 MiB")
    at_limit = _file(tmp_path, "spaces.json", b"{}" + b" " * (SETTINGS_MAX_BYTES - 2))
    assert read_settings(str(at_limit)) == {}


def test_text_that_is_not_utf8_is_refused(tmp_path):
    _refused(_file(tmp_path, "s.toml", b"[train_config]\nsteps = \"\xff\"\n"), "not UTF-8 text")


@pytest.mark.parametrize("name, text", [
    ("deep.json", "[" * 100_000),
    ("deep-closed.json", '{"provenance": ' + "[" * 100 + "]" * 100 + "}"),
    ("deep.toml", "x = " + "[" * 100_000),
    ("deep-inline.toml", "x = " + "{a = " * 2000 + "1" + "}" * 2000),
    ("deep-dotted.toml", ".".join(["a"] * 5000) + " = 1\n"),
    ("deep-header.toml", "[" + ".".join(["a"] * 5000) + "]\n"),
])
def test_deep_nesting_is_refused_in_one_line(tmp_path, name, text):
    _refused(_file(tmp_path, name, text), f"nested more than {SETTINGS_MAX_DEPTH} deep")


def test_invalid_syntax_names_the_format(tmp_path):
    _refused(_file(tmp_path, "s.toml", "[model_config\n"), "not valid TOML")
    _refused(_file(tmp_path, "s.json", '{"model_config": '), "not valid JSON")
    _refused(_file(tmp_path, "list.json", "[1, 2]"), "expected a JSON object with the sections")


# -- sections and keys ------------------------------------------------------------------------------------

def test_misspelt_toml_section_names_the_closest(tmp_path):
    _refused(_file(tmp_path, "s.toml", "[trian_config]\nsteps = 3\n"),
             "no section trian_config (did you mean train_config?)")


def test_misspelt_json_section_names_the_closest(tmp_path):
    _refused(_file(tmp_path, "s.json", '{"model_confg": {"mu": 0.5}}'),
             "no section model_confg (did you mean model_config?)")


def test_unknown_section_lists_the_sections(tmp_path):
    _refused(_file(tmp_path, "s.toml", "[zzz]\n"),
             "no section zzz (choose from model_config, episode_config, train_config)")


@pytest.mark.parametrize("section, key, closest", [
    ("train_config", "stpes", "steps"), ("model_config", "cluster", "clusters"), ("episode_config", "kshot", "k_shot"),
])
def test_misspelt_key_names_the_closest(tmp_path, section, key, closest):
    _refused(_file(tmp_path, "s.toml", f"[{section}]\n{key} = 3\n"),
             f"{section} has no setting {key} (did you mean {closest}?)")


def test_a_strange_key_is_shown_quoted_and_short(tmp_path):
    line = _refused(_file(tmp_path, "s.json", json.dumps({"train_config": {"a\nb" + "x" * 5000: 1}})),
                    "train_config has no setting 'a")
    assert len(line) < 600


def test_compare_takes_the_same_file_and_checks_it_the_same_way(tmp_path):
    _refused(_file(tmp_path, "s.toml", "[trian_config]\n"), "did you mean train_config?", command="compare")
    _refused(_file(tmp_path, "m.json", '{"options": [1]}'), "options: expected a table/object", command="compare")
    _refused(_file(tmp_path, "t.toml", "[train_config]\nsteps = true\n"), "train_config.steps (--steps)",
             command="compare")


# -- values, through the options' own types ---------------------------------------------------------------

@pytest.mark.parametrize("name, text, needle", [
    ("s.toml", '[model_config]\nclusters = [32, "x"]\n',
     "model_config.clusters (--clusters): expected comma-separated"),
    ("s.toml", "[model_config]\nclusters = [32, true]\n", "model_config.clusters (--clusters)"),
    ("s.toml", "[model_config]\nclusters = [[32]]\n", "model_config.clusters (--clusters): expected a list of numbers"),
    ("s.toml", "[model_config]\nclusters = []\n", "model_config.clusters (--clusters)"),
    ("s.toml", "[model_config]\nclusters = [0]\n", "model_config.clusters (--clusters): every value must be >= 1"),
    ("s.toml", "[train_config]\nsteps = true\n", "train_config.steps (--steps): 'true' is not a valid integer"),
    ("s.toml", "[train_config]\nsteps = 1.5\n", "train_config.steps (--steps): '1.5' is not a valid integer"),
    ("s.toml", "[train_config]\nsteps = 0\n", "train_config.steps (--steps): 0 is not in the range x>=1"),
    ("s.toml", "[train_config]\nsteps = [1]\n", "train_config.steps (--steps): expected one value, got a list"),
    ("s.toml", "[train_config]\nsteps = {a = 1}\n", "train_config.steps (--steps): expected a value, got a table"),
    ("s.toml", "[train_config]\nseed = 1979-05-27\n",
     "train_config.seed (--seed): expected a number, text or true/false"),
    ("s.toml", "[train_config]\nseed = -1\n", "train_config.seed (--seed)"),
    ("s.toml", '[train_config]\nlr = "fast"\n', "train_config.lr (--lr): 'fast' is not a valid"),
    ("s.toml", "[train_config]\nlr = inf\n", "train_config.lr (--lr): 'inf' is not a finite number"),
    ("s.json", '{"model_config": {"mu": NaN}}', "model_config.mu (--mu): 'nan' is not a finite number"),
    ("s.toml", "[model_config]\ngate = 1\n", "model_config.gate (--gate): expected true or false, got 1"),
    ("s.toml", '[model_config]\naggregator = "sum"\n', "model_config.aggregator (--aggregator): 'sum' is not one of"),
    ("s.toml", '[episode_config]\non_small = true\n', "episode_config.on_small (--on-small): 'true' is not one of"),
    ("s.json", '{"train_config": {"eval_every": null}}', "train_config.eval_every (--eval-every): null is not a value"),
    ("s.json", '{"model": 5}', "model: expected a model name"),
    ("s.json", '{"model": "gfll"}', "model (--model): 'gfll' is not one of"),
    ("s.json", '{"model": "knn", "options": {"": 1}}', "options: '' is not an option name"),
    ("s.json", '{"model": "knn", "options": [1]}', "options: expected a table/object of baseline options"),
    ("s.json", '{"model_config": []}', "model_config must be a table/object of settings"),
])
def test_a_value_the_option_refuses_is_a_usage_error_naming_file_and_key(tmp_path, name, text, needle):
    _refused(_file(tmp_path, name, text), needle)


def _params(command, args: list[str]) -> dict:
    """The parameters ``command`` parses from ``args`` (nothing runs)."""
    with command.make_context(command.name, [str(a) for a in args]) as ctx:
        return dict(ctx.params)


def test_a_null_meta_batch_is_the_models_own(tmp_path):
    as_json = _file(tmp_path, "s.json", '{"train_config": {"meta_batch": null, "steps": null}}')
    assert _params(train, ["--config", as_json]) == _params(train, [])
    assert _params(train, []).get("meta_batch") is None


def test_values_mean_what_the_same_flags_mean(tmp_path):
    toml = _file(tmp_path, "s.toml", '[model_config]\nclusters = [16, 4]\ngate = false\nmu = 1\naggregator = "att"\n'
                                     '[episode_config]\nk_shot = "5"\n[train_config]\nsteps = 5\nlr = 1e-3\n'
                                     'seed = 3\ngrad_clip = 2\n')
    flags = ["--clusters", "16,4", "--no-gate", "--mu", "1", "--aggregator", "att", "--k-shot", "5", "--steps", "5",
             "--lr", "1e-3", "--seed", "3", "--grad-clip", "2"]
    assert _params(train, ["--config", toml]) == _params(train, flags)
    as_json = _file(tmp_path, "s.json", json.dumps({"model_config": {"clusters": [16, 4], "gate": False, "mu": 1,
                                                                     "aggregator": "att"},
                                                    "episode_config": {"k_shot": 5, "n_query": None},
                                                    "train_config": {"steps": 5, "lr": 0.001, "seed": 3,
                                                                     "grad_clip": 2.0}}))
    assert _params(train, ["--config", as_json]) == _params(train, flags)
    # compare gets the seed as its list of seeds, and flags given still override the file
    got = _params(compare, ["--config", toml, "--steps", "7"])
    assert got["seed"] == [3] and got["steps"] == 7 and got["clusters"] == [16, 4]


def test_the_config_json_of_every_kind_of_run_is_accepted(small_family, tmp_path):
    import gflkit

    cfg = TrainConfig(steps=2, eval_every=2)
    for model in ("gfl", "knn"):
        run = tmp_path / model
        gflkit.train(small_family, model=model, train_cfg=cfg, episode_cfg=EpisodeConfig(k_shot=3), run_dir=run,
                     progress=False, eval_split=None)
        recorded = json.loads((run / "config.json").read_text())
        assert set(recorded) <= {"model_config", "episode_config", "train_config", "model", "options",
                                 *RUN_RECORD_KEYS}, model
        params = _params(train, ["--config", run / "config.json"])
        assert (params["model"], params["k_shot"], params["steps"]) == (model, 3, 2)


# -- fuzzing -------------------------------------------------------------------------------------------------

FUZZ = settings(max_examples=int(os.environ.get("GFLKIT_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_FIELDS = {section: [f.name for f in fields(cls)] for section, cls in
           (("model_config", GFLConfig), ("episode_config", EpisodeConfig), ("train_config", TrainConfig))}
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 40), st.integers(), st.floats(0, 1), st.floats(),
                     st.text(max_size=6), st.sampled_from(["gfl", "knn", "att", "mean", "16,4", "skip", "5", "nan"]))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                       max_leaves=12)


def _table(known: list[str]) -> st.SearchStrategy:
    """A section: its own keys (so that the values get checked), its keys and others, or not a table at all."""
    return st.one_of(st.dictionaries(st.sampled_from(known), st.one_of(_scalars, _values), max_size=4),
                     st.dictionaries(st.one_of(st.sampled_from(known), st.text(max_size=6)), _values, max_size=4),
                     _values)


#: Documents of the sections a settings file has, with random values, some other keys, or any value at all.
_documents = st.one_of(
    st.fixed_dictionaries({}, optional={**{section: _table(known) for section, known in _FIELDS.items()},
                                        "model": _values, "options": _values, "provenance": _values,
                                        "seed": _values}),
    st.dictionaries(st.one_of(st.sampled_from([*_FIELDS, *RUN_RECORD_KEYS, "model", "options"]),
                              st.text(max_size=6)), _values, max_size=5),
    _values,
)


def _toml_string(text: str) -> str:
    escaped = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or c in '\x7f"\\' else c for c in text)
    return f'"{escaped}"'


def _toml_value(value) -> str:
    """``value`` as TOML (a ``None`` becomes a string: TOML has no null)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml_value, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_string(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return _toml_string("null" if value is None else value)


def _toml(document) -> str:
    """A document as a TOML file: its tables as [sections], everything else as keys before them."""
    if not isinstance(document, dict):
        return f"x = {_toml_value(document)}\n"
    lines = [f"{_toml_string(k)} = {_toml_value(v)}" for k, v in document.items() if not isinstance(v, dict)]
    for key, table in document.items():
        if isinstance(table, dict):
            lines += [f"[{_toml_string(key)}]", *(f"{_toml_string(k)} = {_toml_value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


def _check_config(data: bytes, suffix: str, command: str) -> None:
    """``gflkit COMMAND --config FILE --help`` reads the file and stops: exit 0, or 2 with one line naming it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"settings{suffix}"
        path.write_bytes(data)
        result = invoke(command, "--config", path, "--help")
        assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
        assert "Traceback" not in result.output and "unexpected" not in result.output
        if result.exit_code == 2:
            errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
            assert len(errors) == 1 and str(path) in errors[0], result.stderr


_commands = st.sampled_from(["train", "compare"])


@pytest.mark.slow
@FUZZ
@given(document=_documents, command=_commands)
def test_fuzz_json_documents(document, command):
    _check_config(json.dumps(document).encode(), ".json", command)


@FUZZ
@given(document=_documents, command=_commands)
def test_fuzz_toml_documents(document, command):
    _check_config(_toml(document).encode("utf-8", "surrogatepass"), ".toml", command)


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), st.text('{}[]":,= .-0123456789etruflsnaNI\n#_abcdkmop', max_size=300)
                      .map(str.encode)), suffix=st.sampled_from([".json", ".toml"]), command=_commands)
def test_fuzz_bytes(data, suffix, command):
    _check_config(data, suffix, command)
