"""Term weighting against the paper's definitions (Sections 3.3, 5.2, 6.1), computed by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from simweb.core.strategy import Frequency, Strategy
from simweb.core.weighting import (
    ANCHOR_DISTANCE_WEIGHT,
    Weighting,
    distance_weight,
    distance_weights,
    fit_nmdf,
    frequency_factors,
    nmdf_factor,
    normalise_rows,
)


@pytest.mark.parametrize("d, weight", [(0, 5.0), (1, 4.0), (3, 3.0), (7, 2.0), (15, 1.0), (31, 0.0), (32, 0.0),
                                       (2, math.log2(32 / 3)), (100, 0.0)])
def test_distance_weight_is_log2_32_over_1_plus_d_clamped_at_zero(d, weight):
    assert distance_weight(d) == pytest.approx(weight, abs=1e-12)
    assert distance_weights(np.array([d]))[0] == pytest.approx(weight, abs=1e-12)


def test_anchor_words_weigh_log2_32():
    assert ANCHOR_DISTANCE_WEIGHT == distance_weight(0) == 5.0
    with pytest.raises(ValueError, match="distance"):
        distance_weight(-1)


DF = np.array([1, 2, 4, 8, 1000])


def test_none_keeps_tf():
    assert frequency_factors(DF, Frequency.NONE).tolist() == [1.0] * 5


def test_log_is_tf_over_1_plus_log2_df():
    expected = [1 / 1, 1 / 2, 1 / 3, 1 / 4, 1 / (1 + math.log2(1000))]
    assert frequency_factors(DF, Frequency.LOG) == pytest.approx(expected)


def test_sqrt_is_tf_over_sqrt_df():
    expected = [1, 1 / math.sqrt(2), 1 / 2, 1 / math.sqrt(8), 1 / math.sqrt(1000)]
    assert frequency_factors(DF, Frequency.SQRT) == pytest.approx(expected)


def test_nmdf_is_a_gaussian_in_natural_log_df():
    mu, sigma = math.log(4), 1.0
    expected = [math.exp(-0.5 * ((math.log(df) - mu) / sigma) ** 2) for df in DF.tolist()]
    assert frequency_factors(DF, Frequency.NMDF, mu, sigma) == pytest.approx(expected)
    assert nmdf_factor(np.array([4.0]), mu, sigma)[0] == pytest.approx(1.0)  # the peak
    assert nmdf_factor(np.array([4 * math.e]), mu, sigma)[0] == pytest.approx(math.exp(-0.5))  # one sigma away
    with pytest.raises(ValueError, match="mu and sigma"):
        frequency_factors(DF, Frequency.NMDF)


def test_a_df_below_one_is_refused():
    with pytest.raises(ValueError, match="df ≥ 1"):
        frequency_factors(np.array([0, 3]), Frequency.SQRT)


def test_fit_nmdf_centres_the_peak_on_the_df_range():
    mu, sigma = fit_nmdf(np.array([1, 1, 1, 5, 100]))
    assert mu == pytest.approx(math.log(10)) and sigma == pytest.approx(math.log(100) / 4)
    factors = nmdf_factor(np.array([1.0, 10.0, 100.0]), mu, sigma)
    assert factors == pytest.approx([math.exp(-2), 1.0, math.exp(-2)])
    assert fit_nmdf(np.array([7, 7])) == (pytest.approx(math.log(7)), 1.0)
    with pytest.raises(ValueError, match="at least one term"):
        fit_nmdf(np.array([], dtype=np.int64))


def test_weighting_resolve_fits_only_what_is_left_unset():
    df = np.array([1, 100])
    fitted = Weighting.resolve(Strategy(), df)
    assert (fitted.mu, fitted.sigma) == (pytest.approx(math.log(10)), pytest.approx(math.log(100) / 4))
    given = Weighting.resolve(Strategy(nmdf_mu=2.0, nmdf_sigma=0.5), df)
    assert (given.mu, given.sigma) == (2.0, 0.5)
    sqrt = Weighting.resolve(Strategy(frequency="sqrt", normalise_to=3.0), df)
    assert (sqrt.mu, sqrt.sigma, sqrt.normalise_to) == (None, None, 3.0)
    assert sqrt.to_dict() == {"frequency": "sqrt", "nmdf_mu": None, "nmdf_sigma": None, "normalise_to": 3.0}


def test_normalise_rows_scales_each_bag_to_the_constant():
    indptr = np.array([0, 2, 2, 5])
    data = np.array([1.0, 3.0, 2.0, 2.0, 4.0])
    scaled, sums = normalise_rows(indptr, data, 10.0)
    assert scaled.tolist() == pytest.approx([2.5, 7.5, 2.5, 2.5, 5.0])
    assert sums.tolist() == [4.0, 0.0, 8.0]
    # trailing empty rows
    scaled, sums = normalise_rows(np.array([0, 1, 1, 1]), np.array([2.0]), 1.0)
    assert scaled.tolist() == [1.0] and sums.tolist() == [2.0, 0.0, 0.0]
