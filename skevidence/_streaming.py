"""Streaming through scikit-learn pipelines: ``partial_fit`` of a member.

A :class:`~sklearn.pipeline.Pipeline` has no ``partial_fit``. The
meta-estimators stream a pipeline ending in an evidence estimator this way:
on the first batch every transformer is fitted and then frozen (it only
transforms later batches), as the estimators' data-scaled priors are; each
batch then goes through the frozen transformers into the last step's
``partial_fit``. A stateless transformer (``PolynomialFeatures``,
``FunctionTransformer``) is the same map whichever batch fitted it, so for
it freezing changes nothing; a learning one (``StandardScaler``, ``PCA``)
keeps what it learnt from the first batch. The evidence is then that of the
model on the frozen features. Not public.
"""

from contextlib import contextmanager

from sklearn.pipeline import Pipeline

__all__ = ["can_partial_fit", "check_streamable", "partial_fit_member", "restored_on_error"]

_IDENTITY = (None, "passthrough")


def can_partial_fit(estimator):
    """Whether :func:`partial_fit_member` applies: a ``partial_fit``, or a
    Pipeline whose last step has one."""
    if isinstance(estimator, Pipeline):
        return can_partial_fit(estimator.steps[-1][1]) if estimator.steps else False
    return hasattr(estimator, "partial_fit")


def check_streamable(estimator, name):
    """``ValueError``, naming the step and the reason, for a member that cannot stream.

    Called on every member before any of them changes.
    """
    if not isinstance(estimator, Pipeline):
        if not hasattr(estimator, "partial_fit"):
            raise ValueError(f"{name!r} ({type(estimator).__name__}) has no partial_fit, "
                             "so it cannot be conditioned on a stream")
        return
    *transformers, (last_name, last) = estimator.steps
    for step_name, step in transformers:
        if step in _IDENTITY:
            continue
        if not hasattr(step, "transform"):
            # fit_transform-only steps (TSNE, MDS, samplers) embed the very
            # rows they were fitted on: no frozen map exists for later batches.
            raise ValueError(
                f"step {step_name!r} ({type(step).__name__}) of {name!r} cannot stream: it "
                "has no transform, so it cannot be fitted on the first batch and then "
                "applied, frozen, to the later ones")
    if last in _IDENTITY:
        raise ValueError(f"the last step of {name!r} is {last!r}, not an evidence estimator")
    check_streamable(last, f"{name}: {last_name}")


def _transform(step, X, y, first, name):
    """``X`` through one transformer, fitted on it first when ``first``."""
    if step in _IDENTITY:
        return X
    if first:
        # fit then transform, not fit_transform: the first batch goes through
        # the same frozen map as every later one (they differ for
        # transformers that cross-fit, e.g. TargetEncoder).
        step.fit(X, y)
    Xt = step.transform(X)
    if Xt.shape[0] != X.shape[0]:
        raise ValueError(f"step {name!r} ({type(step).__name__}) turned {X.shape[0]} rows "
                         f"into {Xt.shape[0]}: a streamed pipeline must keep one row per "
                         "observation")
    return Xt


def partial_fit_member(estimator, X, y, first, **params):
    """``partial_fit`` of an estimator or of a Pipeline ending in one.

    For a Pipeline, the transformers are fitted on ``X`` when ``first``
    (the first batch of the stream) and only transform it otherwise; the
    last step's ``partial_fit`` gets the transformed batch and ``params``.
    Nested pipelines are handled alike. Returns ``estimator``.
    """
    if not isinstance(estimator, Pipeline):
        estimator.partial_fit(X, y, **params)
        return estimator
    *transformers, (_, last) = estimator.steps
    for step_name, step in transformers:
        X = _transform(step, X, y, first, step_name)
    partial_fit_member(last, X, y, first, **params)
    return estimator


def _objects(estimator):
    """The estimator and, for a Pipeline, every step, nested ones included."""
    objects = [estimator]
    if isinstance(estimator, Pipeline):
        for _, step in estimator.steps:
            if step not in _IDENTITY:
                objects.extend(_objects(step))
    return objects


def snapshot(estimator):
    """What :func:`restore` needs to undo a failed ``partial_fit_member``.

    A shallow copy of each object's attributes suffices: the evidence
    estimators replace their state record on a successful call rather than
    change it (the engine's states and reservoirs are values), and a
    continued pipeline's transformers are not refitted.
    """
    return [(obj, dict(vars(obj))) for obj in _objects(estimator)]


def restore(saved):
    """Put back the attributes saved by :func:`snapshot`."""
    for obj, attributes in saved:
        vars(obj).clear()
        vars(obj).update(attributes)


@contextmanager
def restored_on_error(estimators):
    """Put ``estimators`` back as they were if the body raises (then re-raise).

    With a process-based joblib backend the workers update copies and the
    originals never change; in-process, they are updated in place, and
    this undoes it.
    """
    saved = [snapshot(est) for est in estimators]
    try:
        yield
    except BaseException:
        for state in saved:
            restore(state)
        raise
