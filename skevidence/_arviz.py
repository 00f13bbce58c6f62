"""Export of a fitted estimator to ArviZ: the work behind ``to_inference_data``.

ArviZ is an optional dependency. The groups with draws (``posterior``,
``prior``, ``log_likelihood``) go through ``arviz.from_dict``, whose signature differs
between ArviZ 0.x (one keyword per group, returns ``InferenceData``) and 1.x
(a dict of groups, returns an ``xarray.DataTree``); the groups without the
``(chain, draw)`` layout (``sample_stats`` with its per-chunk trace,
``observed_data``, ``constant_data``) are built as ``xarray.Dataset`` and
added to the result, which both containers accept.
"""

import inspect
import numbers

import numpy as np
import torch
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._config import torch_threads
from .inference.resampling import systematic_resample
from .models.batches import cast_batch

__all__ = ["feature_coords", "import_arviz", "to_inference_data"]

ARVIZ_INSTALL_HINT = ("to_inference_data needs ArviZ, an optional dependency of skevidence: "
                      "pip install arviz (or pip install 'skevidence[arviz]')")


def import_arviz():
    """``arviz``, or an ``ImportError`` that says how to install it."""
    try:
        import arviz
    except ImportError as exc:
        raise ImportError(ARVIZ_INSTALL_HINT) from exc
    return arviz


def feature_coords(est):
    """Feature labels: ``feature_names_in_`` after a DataFrame, else ``x0, x1, ...``."""
    names = getattr(est, "feature_names_in_", None)
    if names is None:
        return [f"x{j}" for j in range(est.n_features_in_)]
    return [str(name) for name in names]


def _draw_indices(weights, n_draws, random_state):
    """Particle index of every draw: systematic resampling, then shuffled."""
    rng = check_random_state(random_state)
    with np.errstate(divide="ignore"):  # a zero weight is a particle never drawn
        log_W = np.log(weights)
    index = systematic_resample(log_W, rng.uniform(), n_draws)
    # Systematic resampling returns the copies of a particle side by side;
    # ArviZ reads the draw axis as a chain's time order (ESS, MCSE, R-hat),
    # where adjacent copies would look like autocorrelation.
    return rng.permutation(index)


def _pointwise_log_likelihood(est, X, y):
    """``log p(observation i | particle m)``, ``[M, n]`` float64, and the observed data."""
    X, y_checked = est._validate_training_data(X, y if est._takes_y() else None, reset=False)
    batch = est._to_batch(X, y_checked)
    batch = cast_batch(batch, torch.float64)
    theta = est._particles_tensor()
    # The same row blocks as the predictions: bounded memory whatever n.
    width = getattr(est._model, "n_components", None) or getattr(est._model, "n_classes", 1)
    rows = est._rows_per_block(width)
    n = X.shape[0]
    with torch_threads(), torch.no_grad():
        blocks = [est._model.log_likelihood(theta, tuple(t[start : start + rows] for t in batch))
                  for start in range(0, n, rows)]
    log_lik = _numpy(torch.cat(blocks, dim=1))
    return log_lik, X, est._observed_targets(y_checked)


def _prior_draws(est, n_draws, random_state):
    """``n_draws`` draws of the natural parameters from the prior the estimator used."""
    # Seeded after the resampling's draws, so the posterior's are as without a prior group.
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    generator = torch.Generator(device=est.device).manual_seed(seed)
    with torch_threads(), torch.no_grad():
        theta = est._model.sample_prior(n_draws, generator, dtype=est._torch_dtype,
                                        device=est.device)
        params = est._natural_parameters(theta).params
    return {name: _numpy(value)[None] for name, value in params.items()}


def _numpy(value):
    """A tensor (any device) or array as a float64 numpy array."""
    if torch.is_tensor(value):
        value = value.detach().to("cpu", torch.float64).numpy()
    return np.asarray(value, dtype=np.float64)


def _from_dict(az, groups, coords, dims):
    """``arviz.from_dict`` under ArviZ 0.x (keyword per group) or 1.x (dict of groups)."""
    if "posterior" in inspect.signature(az.from_dict).parameters:
        return az.from_dict(**groups, coords=coords, dims=dims)
    return az.from_dict(groups, coords=coords, dims=dims)


def _add_group(data, name, dataset):
    """Add ``dataset`` as group ``name`` of an ``InferenceData`` (0.x) or ``DataTree`` (1.x)."""
    if hasattr(data, "add_groups"):
        data.add_groups({name: dataset})
    else:
        data[name] = dataset


def _sample_stats(est, weights):
    """The evidence per chunk, its final value and error bar; ``weight`` per draw if given."""
    import xarray as xr

    trace = est.evidence_trace_
    per_chunk = ("chain", "chunk")
    data = {
        "log_marginal_likelihood": (per_chunk, trace["log_evidence"][None]),
        "log_marginal_likelihood_std": (per_chunk, trace["log_evidence_std"][None]),
        "n_annealing_steps": (per_chunk, trace["n_annealing_steps"][None]),
        "ess": (per_chunk, trace["ess"][None]),
        "log_evidence": (("chain",), np.array([est.log_evidence_])),
        "log_evidence_std": (("chain",), np.array([est.log_evidence_std_])),
    }
    coords = {"chain": [0], "chunk": np.arange(trace["n_seen"].shape[0]),
              "n_seen": ("chunk", trace["n_seen"])}
    if weights is not None:
        data["weight"] = (("chain", "draw"), weights[None])
        coords["draw"] = np.arange(weights.shape[0])
    return xr.Dataset(data, coords=coords, attrs={"inference_library": "skevidence"})


def _data_group(arrays, coords):
    """``observed_data`` / ``constant_data``: ``{name: (array, dims)}``, no draw dims."""
    import xarray as xr

    data = {}
    for name, (array, dims) in arrays.items():
        array = np.asarray(array)
        dims = tuple(dims) + tuple(f"{name}_dim_{i}" for i in range(array.ndim - len(dims)))
        data[name] = (dims, array)
    used = {dim for _, (dims, _) in data.items() for dim in dims}
    return xr.Dataset(data, coords={k: v for k, v in coords.items() if k in used})


# Resampled draws are laid out in this many chains: ArviZ's diagnostics
# (r_hat, and the shape check behind az.summary) ask for at least two, and
# four is the layout of most MCMC output they are read against.
N_CHAINS = 4


def _is_count(value, minimum=1):
    return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
            and value >= minimum)


def to_inference_data(est, X=None, y=None, *, n_draws=None, resample=True, random_state=None,
                      feature_names=None):
    """See :meth:`BaseEvidenceEstimator.to_inference_data`; ``feature_names`` labels the
    features in place of the estimator's own (those of a pipeline's transformers)."""
    check_is_fitted(est, "log_evidence_")
    az = import_arviz()
    if not isinstance(resample, (bool, np.bool_)):
        raise TypeError(f"resample must be True or False, got {resample!r}")
    n_particles = est.particles_.shape[0]
    if resample:
        if n_draws is None:  # at least one per particle, in whole chains
            n_draws = N_CHAINS * -(-n_particles // N_CHAINS)
        if not _is_count(n_draws, N_CHAINS) or n_draws % N_CHAINS:
            raise ValueError(f"n_draws must be a positive multiple of {N_CHAINS} (the draws "
                             f"are laid out in {N_CHAINS} chains), got {n_draws!r}")
        index = _draw_indices(est.particle_weights_, int(n_draws), random_state)
        n_chains = N_CHAINS
    else:
        if n_draws is not None and n_draws != n_particles:
            raise ValueError(f"resample=False keeps the {n_particles} particles; n_draws must "
                             f"be None or {n_particles}, got {n_draws!r}")
        index = np.arange(n_particles)
        n_chains = 1

    def in_chains(values):
        """Values per particle -> per draw, ``[chain, draw, ...]``."""
        values = values[index]
        return values.reshape(n_chains, -1, *values.shape[1:])
    if X is None and y is not None:
        raise ValueError("y was given without X: pass both to export the log likelihood")
    if X is not None and y is None and est._takes_y():
        raise ValueError(f"{type(est).__name__} was fitted with targets: pass X and y to "
                         "export the pointwise log likelihood")

    # The engine's particles (``particles_`` may already be mapped, e.g. the
    # linear model's natural [beta, log sigma^2]); their order is that of
    # ``particle_weights_``.
    theta = est._particles_tensor()
    with torch.no_grad():
        natural = est._natural_parameters(theta)
    params, dims, coords = natural.params, natural.dims, natural.coords
    # Natural parameters per particle, then per draw: [chain, draw, ...]
    prior = _prior_draws(est, index.shape[0], random_state)
    groups = {"posterior": {name: in_chains(_numpy(value)) for name, value in params.items()},
              "prior": {name: value.reshape(n_chains, -1, *value.shape[2:])
                        for name, value in prior.items()}}
    dims, coords = dict(dims), dict(coords)
    if feature_names is not None:
        feature_names = [str(name) for name in feature_names]
        if len(feature_names) != est.n_features_in_:
            raise ValueError(f"{len(feature_names)} feature names for the "
                             f"{est.n_features_in_} features of {type(est).__name__}")
        if "feature" in coords:
            coords["feature"] = feature_names
    data_groups = {}
    if X is not None:
        log_lik, X_checked, y_observed = _pointwise_log_likelihood(est, X, y)
        observed = "y" if y_observed is not None else "X"
        groups["log_likelihood"] = {observed: in_chains(log_lik)}
        dims[observed] = ["observation"]
        n = X_checked.shape[0]
        data_coords = {"observation": np.arange(n),
                       "feature": feature_names or feature_coords(est)}
        coords["observation"] = data_coords["observation"]
        X_entry = (X_checked, ["observation", "feature"])
        if y_observed is None:
            data_groups["observed_data"] = _data_group({"X": X_entry}, data_coords)
        else:
            data_groups["observed_data"] = _data_group({"y": (y_observed, ["observation"])},
                                                       data_coords)
            data_groups["constant_data"] = _data_group({"X": X_entry}, data_coords)
    data = _from_dict(az, groups, coords, dims)
    _add_group(data, "sample_stats",
               _sample_stats(est, None if resample else est.particle_weights_.copy()))
    for name, dataset in data_groups.items():
        _add_group(data, name, dataset)
    return data
