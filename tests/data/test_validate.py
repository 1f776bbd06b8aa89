"""The checks shared by the readers, the restricted unpickler and the option types."""
from __future__ import annotations

import json
import pickle
from collections import defaultdict

import click
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from gflkit.data.sources.base import BadInputReport
from gflkit.data.sources.safe_pickle import load_planetoid_pickle
from gflkit.data.validate import INT64_MAX, dense_class_ids, finite_features, guard_reader, int_ids, reading
from gflkit.errors import DataFormatError, GFLError
from gflkit_cli.options import FiniteFloatRange, GraphCounts, IntList, NameList


def test_finite_features_zeroes_and_counts_rows():
    report = BadInputReport()
    x = np.array([[1, np.nan], [2, 3], [np.inf, -np.inf]], dtype=np.float64)
    out = finite_features(x, report, "f.npy")
    assert out.dtype == np.float32 and out.tolist() == [[1, 0], [2, 3], [0, 0]]
    assert report.as_dict() == {"non-finite feature value (set to 0)": {"count": 2, "first": ["f.npy: row 0"]}}


def test_finite_features_leaves_clean_input_alone():
    x = np.ones((2, 2), dtype=np.float32)
    report = BadInputReport()
    assert finite_features(x, report) is x and not report


def test_finite_features_refuses_non_numbers():
    with pytest.raises(DataFormatError, match="f.npy: features must be numbers"):
        finite_features(np.array([["a"]]), None, "f.npy")


def test_int_ids_are_exact_up_to_the_int64_limit():
    ids, ok = int_ids(pd.Series(["0", " 7 ", "7.0", str(INT64_MAX), str(INT64_MAX + 1), "-1", "1.5", "x", "",
                                 "1e3", str(10**20), "nan", "\u0661", "\u00b2"]))
    assert ids.tolist() == [0, 7, 7, INT64_MAX, -1, -1, -1, -1, -1, 1000, -1, -1, 1, -1]
    assert ok.tolist() == [True, True, True, True, False, False, False, False, False, True, False, False, True, False]


@pytest.mark.parametrize("values, expect", [
    (np.array([3, -2, 9], dtype=np.int64), [3, -1, 9]),
    (np.array([2**64 - 1, 5], dtype=np.uint64), [-1, 5]),
    (np.array([1.0, 2**60, np.nan]), [1, -1, -1]),
    (np.array([True, False]), [-1, -1]),
    ([5, None, "6"], [5, -1, 6]),
])
def test_int_ids_of_other_types(values, expect):
    assert int_ids(values)[0].tolist() == expect


def test_dense_class_ids_never_spans_the_largest_id():
    label, names = dense_class_ids(np.array([10**15, -1, 4, 10**15]))
    assert label.tolist() == [1, -1, 0, 1] and names == ["4", str(10**15)]


def test_reading_names_the_file_and_line(tmp_path):
    path = tmp_path / "x.json"
    with pytest.raises(DataFormatError) as err:
        with reading(path):
            json.loads('{\n\n"a": }')
    assert str(err.value).startswith(f"{path}, line 3: cannot be read (JSONDecodeError: ")
    assert "\n" not in str(err.value)


def test_reading_keeps_one_line_of_a_long_message(tmp_path):
    with pytest.raises(DataFormatError) as err:
        with reading(tmp_path / "g.bin"):
            raise RuntimeError("first\n  C++ frame 1\n  C++ frame 2")
    assert str(err.value) == f"{tmp_path / 'g.bin'}: cannot be read (RuntimeError: first); check the file or " \
                             "download it again"


def test_reading_prefixes_user_errors_that_name_no_file(tmp_path):
    with pytest.raises(GFLError, match=f"^{tmp_path / 'd'}: too few classes$"):
        with reading(tmp_path / "d"):
            raise GFLError("too few classes")
    with pytest.raises(DataFormatError, match=f"^{tmp_path / 'e.csv'}: bad$"):
        with reading(tmp_path / "d"):
            raise DataFormatError(f"{tmp_path / 'e.csv'}: bad")  # names a file beside it: kept as it is


def test_reading_lets_ctrl_c_through(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with reading(tmp_path):
            raise KeyboardInterrupt


def test_guard_reader_uses_the_first_argument(tmp_path):
    @guard_reader
    def reader(path, factor=1):
        return [1, 2][factor]

    assert reader(tmp_path, 1) == 2
    with pytest.raises(DataFormatError, match=f"^{tmp_path}: cannot be read \\(IndexError"):
        reader(tmp_path, 5)


def test_restricted_unpickler_reads_the_planetoid_types(tmp_path):
    objects = [sp.csr_matrix(np.eye(3, dtype=np.float32)), np.eye(2), defaultdict(list, {0: [1, 2]}),
               sp.lil_matrix((2, 2)), {"a": [1, 2.0, (3,)]}]
    for i, obj in enumerate(objects):
        path = tmp_path / f"ind.x.{i}"
        path.write_bytes(pickle.dumps(obj, protocol=2))
        back = load_planetoid_pickle(path)
        assert type(back) is type(obj)


@pytest.mark.parametrize("payload", [
    b"cos\nsystem\n(Vtouch PWNED\ntR.",
    b"cbuiltins\ngetattr\n(cbuiltins\nobject\nV__subclasses__\ntR.",
    b"csubprocess\nPopen\n((Vtouch\nVPWNED\nltR.",
    b"cnumpy\nload\n(VPWNED\ntR.",
])
def test_restricted_unpickler_refuses_anything_else(payload, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "ind.cora.allx"
    path.write_bytes(payload)
    with pytest.raises(DataFormatError, match="refused to unpickle") as err:
        load_planetoid_pickle(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "NaN", "1e400"])
def test_finite_float_range_refuses_non_finite(text):
    with pytest.raises(click.BadParameter, match="not a finite number"):
        FiniteFloatRange().convert(text, None, None)


def test_finite_float_range_keeps_the_range():
    assert FiniteFloatRange(0, 1).convert("0.5", None, None) == 0.5
    with pytest.raises(click.BadParameter):
        FiniteFloatRange(0, 1).convert("2", None, None)


def test_list_types():
    assert IntList(1).convert("8, 4", None, None) == [8, 4]
    assert IntList(1).convert((8, 4), None, None) == [8, 4]
    assert GraphCounts().convert("3,0,2", None, None) == [3, 0, 2]
    for bad in ("0,1,1", "1,-1,1", "1,1", "a,b,c", ""):
        with pytest.raises(click.BadParameter):
            GraphCounts().convert(bad, None, None)
    with pytest.raises(click.BadParameter, match="at least one value"):
        NameList().convert(" , ", None, None)
