"""The recipes of docs/contributing.md run as written.

Each code block of the page follows a ``<!-- recipe: NAME -->`` line. A
``python`` block whose first line names a file of the package
(``# gflkit/models/baselines/centroid.py``) is loaded as that module, so its
relative imports resolve as they would in the package; other ``python``
blocks run in a temporary working folder, in one namespace per recipe. A
``diff`` block's removed and context lines must be lines of the files it
names, and each file must still compile once the edit is applied; its effect
on a registry is then made with ``monkeypatch``, so nothing outlives the test.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import shlex
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "contributing.md"
MARKER = re.compile(r"^<!--\s*recipe:\s*([\w-]+)\s*-->$")
FENCE = re.compile(r"^```(\w*)$")
QUIET = {"GFLKIT_NO_PROGRESS": "1"}
# The recipes train one seed on purpose; the warning that says so is not what they show.
pytestmark = pytest.mark.filterwarnings("ignore::gflkit.errors.OneSeedWarning")


def recipes() -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]]]:
    """The page's fenced blocks: recipe name -> (language, code) for those after a recipe marker, and
    (language, code) of the others."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    named, unnamed, name, i = {}, [], None, 0
    while i < len(lines):
        marker, fence = MARKER.match(lines[i].strip()), FENCE.match(lines[i].strip())
        if marker:
            name = marker.group(1)
        elif fence and fence.group(1):
            body = []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            block = (fence.group(1), "\n".join(body) + "\n")
            if name:
                assert name not in named, f"two blocks named {name}"
                named[name] = block
            else:
                unnamed.append(block)
            name = None
        elif lines[i].strip():
            name = None  # a marker belongs to the block right after it
        i += 1
    return named, unnamed


@pytest.fixture(scope="module")
def page():
    return recipes()[0]


def test_every_python_and_diff_block_is_a_recipe():
    named, unnamed = recipes()
    untested = [code.splitlines()[0] for lang, code in unnamed if lang in ("python", "diff")]
    assert not untested, f"blocks of docs/contributing.md that no test runs: {untested}"
    assert {"model-module", "model-register", "model-check", "source-module", "source-example", "source-library",
            "source-command", "source-register", "source-cli", "encoder-register", "encoder-check",
            "encoder-builtin"} <= set(named)


def load_module(code: str, monkeypatch, tmp_path: Path):
    """The block as the package module its first line names (``# gflkit/x/y.py`` -> ``gflkit.x.y``)."""
    first = code.splitlines()[0]
    assert first.startswith("# gflkit/") and first.endswith(".py"), first
    rel = first[2:]
    assert not (REPO / rel).exists(), f"{rel} exists: the recipe must name a new module"
    name = rel[:-3].replace("/", ".")
    path = tmp_path / Path(rel).name
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def hunks(code: str) -> list[tuple[str, list[str]]]:
    """The hunks of a diff block: (file, its lines, each starting with ``' '``, ``'-'`` or ``'+'``)."""
    found, file = [], None
    for line in code.splitlines():
        if line.startswith("--- "):
            continue
        if line.startswith("+++ "):
            file = line[4:].strip()
            found.append((file, []))
        elif line.startswith("@@"):
            found.append((file, []))
        else:
            assert file is not None, f"diff line before a file header: {line!r}"
            found[-1][1].append(line)
    return found


def check_diff(code: str) -> list[tuple[str, list[str]]]:
    """Apply each hunk to a copy of its file: its old lines must be there once, adjacent and in order,
    and an edited Python file must still compile. Returns the hunks."""
    edited: dict[str, str] = {}
    for rel, lines in hunks(code):
        text = edited.get(rel) or (REPO / rel).read_text(encoding="utf-8")
        old = "".join(line[1:] + "\n" for line in lines if line[:1] in (" ", "-", ""))
        new = "".join(line[1:] + "\n" for line in lines if line[:1] in (" ", "+", ""))
        assert text.count(old) == 1, f"docs/contributing.md: {rel} does not hold these lines once:\n{old}"
        edited[rel] = text.replace(old, new)
    for rel, text in edited.items():
        if rel.endswith(".py"):
            compile(text, rel, "exec")
    return hunks(code)


TABLE = re.compile(r"^(\w+)(?::[^=]*)? = \{$")


def add_table_entries(code: str, monkeypatch) -> dict[str, dict]:
    """What the diff adds to module-level tables (a hunk whose first line opens ``NAME = {``), added
    to those tables for the test only. Returns table name -> the entries added."""
    added = {}
    for rel, lines in check_diff(code):
        table = TABLE.match(lines[0][1:])
        if not (rel.startswith("gflkit/") and table):
            continue
        module = importlib.import_module(rel[:-3].replace("/", "."))
        entries = eval("{" + "\n".join(line[1:] for line in lines if line.startswith("+")) + "}",
                       {"__builtins__": {}, "dict": dict})
        for key, value in entries.items():
            monkeypatch.setitem(getattr(module, table.group(1)), key, value)
        added[table.group(1)] = entries
    return added


def run_block(code: str, namespace: dict) -> None:
    exec(compile(code, str(PAGE), "exec"), namespace)


def test_the_model_recipe_trains_scores_and_keeps_the_contract(page, tmp_path, monkeypatch):
    import gflkit
    from gflkit import names
    from gflkit.config import EpisodeConfig
    from gflkit.data import SyntheticSpec, make_synthetic_family
    from gflkit.episodes import EpisodeSampler
    from gflkit.graphs import GraphCache
    from gflkit.models.baselines import TRANSFER

    module = load_module(page["model-module"][1], monkeypatch, tmp_path)
    added = add_table_entries(page["model-register"][1], monkeypatch)
    assert added["TRANSFER_BASELINES"] == {"centroid": ".centroid:NearestCentroid"}
    assert TRANSFER["centroid"] is module.NearestCentroid and "centroid" in names.trainable_names()
    assert names.display_name("centroid") == "Nearest centroid"

    monkeypatch.chdir(tmp_path)
    run_block(page["model-check"][1], {})
    assert (tmp_path / "runs" / "centroid" / "best.pt").is_file()

    # what `pytest tests/models/test_common.py -k centroid` runs once the line is in the table
    monkeypatch.syspath_prepend(str(REPO / "tests" / "models"))
    common = importlib.import_module("test_common")
    tiny = make_synthetic_family(SyntheticSpec(n_train=3, n_val=1, n_test=1, num_classes=3, feat_size=8,
                                               min_nodes=40, max_nodes=60), seed=0, name="tiny")
    result = gflkit.train(tiny, model="centroid", steps=2, eval_every=2, meta_batch=2, k_shot=3, n_query=6,
                          run_dir=tmp_path / "contract", progress=False, eval_split=None, return_result=True)[0]
    sampler = EpisodeSampler(tiny, "test", EpisodeConfig(k_shot=3, n_query=6), seed=0)
    gid = sampler.graph_ids[0]
    graph_and_episode = (GraphCache(tiny)[gid], sampler.episode(gid, 0))
    common.test_model_declares_its_capabilities(lambda name: result, "centroid")
    common.test_class_scores_shapes(lambda name: result, graph_and_episode, "centroid")
    common.test_checkpoint_round_trip(lambda name: result, graph_and_episode, "centroid")
    common.test_unknown_options_are_refused(tiny, "centroid")


def test_the_data_source_recipe_reads_samples_and_preprocesses(page, tmp_path, monkeypatch):
    from click.testing import CliRunner

    import gflkit_cli.preprocess_real as preprocess_real
    from gflkit.data import load_collection
    from gflkit.errors import DataFormatError
    from gflkit_cli.main import cli
    from gflkit_cli.preprocess import preprocess

    (tmp_path / "modules").mkdir()
    module = load_module(page["source-module"][1], monkeypatch, tmp_path / "modules")
    monkeypatch.chdir(tmp_path)
    run_block(page["source-example"][1], {})
    run_block(page["source-library"][1], {})
    assert load_collection(tmp_path / "processed" / "toy").source == "adjlist"

    # malformed input: one error naming the file (and the line where there is one)
    bad = tmp_path / "bad.adjlist"
    bad.write_text("0 a 1.0,2.0 1\n1 b x,2.0 0\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.adjlist:2: NODE must be an integer"):
        module.read_adjlist(bad)
    bad.write_text("0 a 1.0,2.0 1\n1 b 1.0 0\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.adjlist: lines have different numbers of features"):
        module.read_adjlist(bad)
    bad.write_text("0 a 1.0 1 7\n1 b 2.0 0\n", encoding="utf-8")
    assert module.read_adjlist(bad).report.counts == {"neighbour that is not a node id": 1}

    added = add_table_entries(page["source-register"][1], monkeypatch)
    assert set(added["FAMILY_DEFAULTS"]) == {"adjlist"}
    namespace = dict(vars(preprocess_real))  # the command is written as a part of cli/preprocess_real.py
    run_block(page["source-command"][1], namespace)
    monkeypatch.setitem(preprocess.commands, "adjlist", namespace["adjlist"])
    command = shlex.split(page["source-cli"][1])
    assert command[:3] == ["gflkit", "preprocess", "adjlist"]
    out = CliRunner().invoke(cli, command[1:] + ["--data-root", str(tmp_path / "root")], env=QUIET)
    assert out.exit_code == 0, out.output
    family = load_collection(tmp_path / "root" / "processed" / "adjlist")
    assert family.source == "adjlist" and len(family.graphs) == 10


def test_the_encoder_recipe_registers_trains_and_embeds(page, tmp_path, monkeypatch):
    from gflkit import names
    from gflkit.nn import encoder

    # registrations made by the recipe are dropped after the test
    registered = set(names.REGISTERED_ENCODERS)
    monkeypatch.setattr(encoder, "_REGISTERED", dict(encoder._REGISTERED))
    monkeypatch.setattr(names, "REGISTERED_ENCODERS", registered)
    monkeypatch.setattr(encoder, "REGISTERED_ENCODERS", registered)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    run_block(page["encoder-register"][1], namespace)
    assert "tag" in names.encoder_names()
    run_block(page["encoder-check"][1], namespace)
    assert (tmp_path / "runs" / "tag" / "best.pt").is_file()
    added = [line for _, lines in check_diff(page["encoder-builtin"][1]) for line in lines if line.startswith("+")]
    assert any('"tag"' in line for line in added)
