import math

import numpy as np
import pytest

from gflkit.evaluation.statistics import adjust_p


def test_holm_matches_the_step_down_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.02, 0.03, 0.06, 0.06
    np.testing.assert_allclose(adjust_p(p, "holm"), [0.03, 0.06, 0.06, 0.02])


def test_bh_matches_the_step_up_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005*4/1=0.02, 0.01*4/2=0.02, 0.03*4/3=0.04, 0.04*4/4=0.04 -> running min from the top
    np.testing.assert_allclose(adjust_p(p, "bh"), [0.02, 0.04, 0.04, 0.02])


def test_nan_rows_are_not_in_the_family():
    out = adjust_p([math.nan, 0.02, 0.5], "holm")
    assert math.isnan(out[0])
    np.testing.assert_allclose(out[1:], [0.04, 0.5])


def test_adjusted_p_values_are_capped_at_one_and_never_below_the_raw_ones():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=40)
    for method in ("holm", "bh"):
        adj = adjust_p(p, method)
        assert (adj >= p - 1e-15).all() and (adj <= 1).all()
    np.testing.assert_array_equal(adjust_p(p, "none"), p)


def test_unknown_adjustment_names_the_choices():
    with pytest.raises(ValueError, match="holm, bh, none"):
        adjust_p([0.1], "bonferroni")


def test_one_test_graph_is_warned_and_several_are_not():
    import warnings

    from gflkit.errors import OneGraphWarning
    from gflkit.evaluation.statistics import warn_one_graph

    with pytest.warns(OneGraphWarning, match="one test graph of cora: .*this graph only"):
        warn_one_graph(1, "cora")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_one_graph(5, "cora")
