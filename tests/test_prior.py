"""PriorRecord (the fitted ``prior_``) and the checks of stated prior arrays."""

import numpy as np
import pytest

from skevidence._prior import PriorRecord, prior_array


def test_record_is_a_read_only_mapping_with_attributes_and_a_readable_repr():
    record = PriorRecord("x ~ N(m, s^2)", m=np.array([1.0, 2.0]), s=3.0)
    assert dict(record).keys() == {"m", "s"} and len(record) == 2
    assert record.s == record["s"] == 3.0
    np.testing.assert_array_equal(record.m, [1.0, 2.0])
    with pytest.raises(AttributeError):
        record.s = 1.0
    with pytest.raises(ValueError):
        record.m[0] = 0.0
    with pytest.raises(AttributeError):
        record.missing
    assert record == PriorRecord("x ~ N(m, s^2)", m=np.array([1.0, 2.0]), s=3.0)
    assert record != PriorRecord("x ~ N(m, s^2)", m=np.array([1.0, 2.5]), s=3.0)
    assert repr(record) == "PriorRecord(\n    x ~ N(m, s^2)\n    m = [1., 2.]\n    s = 3.0\n)"


def test_prior_array_broadcasts_and_explains_what_it_rejects():
    np.testing.assert_array_equal(prior_array(2.0, "a", (3,)), [2.0] * 3)
    np.testing.assert_array_equal(prior_array([1.0, 2.0], "a", (2, 2)), [[1.0, 2.0]] * 2)
    np.testing.assert_array_equal(prior_array([[1.0, 2.0]], "a", (3, 2)), [[1.0, 2.0]] * 3)
    with pytest.raises(ValueError, match=r"a must be a number or an array of shape \(2,\)"):
        prior_array([1.0, 2.0, 3.0], "a", (2,))
    with pytest.raises(ValueError, match="finite"):
        prior_array([1.0, np.nan], "a", (2,))
    with pytest.raises(ValueError, match="positive"):
        prior_array([1.0, 0.0], "a", (2,), positive=True)
