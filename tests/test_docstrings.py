"""The estimators' docstrings are assembled from named pieces (skevidence/_docstrings.py)."""

import pytest

from skevidence import (EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression,
                        EvidenceModel)
from skevidence._docstrings import fill, warmup_doc

ESTIMATORS = [EvidenceLinearRegression, EvidenceLogisticRegression, EvidenceGMM, EvidenceModel]


def test_fill_rejects_pieces_the_template_lacks_or_leaves_out():
    with pytest.raises(ValueError, match="fields"):
        fill("a {x}", x=1, y=2)
    with pytest.raises(ValueError, match="fields"):
        fill("a {x} {y}", x=1)
    assert fill("a {x}", x=1) == "a 1"


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_every_estimator_documents_the_shared_parameters_and_attributes(cls):
    doc = cls.__doc__
    for name in cls._get_param_names():
        assert f"    {name} : " in doc, name
    for attribute in ("log_evidence_std_", "evidence_trace_", "diagnostics_"):
        assert f"    {attribute} : " in doc, attribute


def test_the_warmup_paragraph_follows_each_estimator():
    assert "fewer than 2000 observations" in EvidenceGMM.__doc__
    assert "steps in single precision" in EvidenceLogisticRegression.__doc__
    # linear regression never moves by SGHMC: no warm-up paragraph, exact moves throughout
    assert warmup_doc() not in EvidenceLinearRegression.__doc__
    assert "exact tempered posterior throughout" in EvidenceLinearRegression.__doc__
    assert warmup_doc(why=False) in EvidenceModel.__doc__


def test_each_estimator_documents_its_own_dtype_default():
    assert 'numpy / torch dtype, default="float32"' in EvidenceLogisticRegression.__doc__
    for estimator in (EvidenceLinearRegression, EvidenceGMM, EvidenceModel):
        assert 'numpy / torch dtype, default="float64"' in estimator.__doc__
