"""Docstring paragraphs shared by the estimators, as named pieces.

A class docstring takes them through :func:`fill`, which fails at import
when a template lacks one of the pieces it is given (``str.format`` and
``str.replace`` would silently leave the text unchanged).
"""

import string

__all__ = ["METHOD_DOCS", "TRUST_ATTRIBUTES_DOC", "WEIGHTS_ATTRIBUTES_DOC", "fill",
           "method_doc", "shared_params_doc", "warmup_doc"]


def fill(template, **pieces):
    """``template`` with every ``{name}`` replaced by ``pieces[name]``, all of them used."""
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    if fields != set(pieces):
        raise ValueError(f"docstring template has fields {sorted(fields)}, "
                         f"given {sorted(pieces)}")
    return template.format(**pieces)


_WARMUP_DOC = """While
        fewer than {size} observations have been seen the moves are instead
        up to ``2 * n_burnin`` Metropolis-adjusted (generalised HMC)
        steps{precision} on the exact tempered posterior{why}; a move
        stops early once the particles' correlation with their starting
        points has settled."""

_WARMUP_WHY = """ (cheap while the data are few):
        small data sets give the least Gaussian posteriors (separable
        classes, uncentred features), where unadjusted steps can diverge"""


def warmup_doc(size=1000, *, single_precision=False, why=True):
    """The ``{warmup}`` piece of the ``n_burnin`` paragraph: how the first
    ``size`` observations are absorbed."""
    return fill(_WARMUP_DOC, size=size,
                precision=" in single precision" if single_precision else "",
                why=_WARMUP_WHY if why else "")


# The fitted attributes that say how far to trust the estimate.
TRUST_ATTRIBUTES_DOC = """    log_evidence_std_ : float
        Estimated Monte Carlo standard deviation of ``log_evidence_`` from
        this one run: the variances of the weight segments between
        resamplings, ``1 / ESS - 1 / n_particles`` each, summed (exact for
        particles that are independent posterior draws when a segment
        starts). It does not capture the sampler's bias: particles that
        lag the posterior (see ``diagnostics_``) or miss a mode give an
        error beyond it. Its calibration against exact evidences is on
        :doc:`the benchmarks page </benchmarks>`. The annealing's estimate
        includes half the importance-weight part of this variance (all of
        it with ``method="sgais"``, ``"ais"``, ``"smc"`` and
        ``"sequential"``): the log of the unbiased estimate of the evidence
        is low by that much on average. With ``method="sgais"``, where the
        importance-sampling check in ``diagnostics_`` has an error bar to
        rely on (an ESS of at least a fifth of 256 draws), ``log_evidence_`` and
        ``log_evidence_std_`` are those of the two estimates combined: their
        inverse-variance weighted mean, and its std times the Birge ratio
        ``max(1, |difference| / sqrt(std_a**2 + std_b**2))``, which widens
        it over a disagreement beyond their error bars; a check made at
        fewer observations is carried forward with the annealing's
        increments since. ``diagnostics_["annealing_log_evidence"]`` and
        ``["annealing_log_evidence_std"]`` are the annealing's alone (the
        last entries of ``evidence_trace_``).
    evidence_trace_ : dict of ndarray
        One entry per chunk: ``n_seen``, ``log_evidence``,
        ``n_annealing_steps``, ``ess`` (of the weights after the chunk),
        ``log_evidence_std``, ``n_particles`` (the most used during the
        chunk), ``n_resamplings``, ``n_diverged``,
        ``max_diverged_fraction``, ``n_adjusted_moves`` and
        ``acceptance`` (their mean acceptance; NaN when there were none).
    diagnostics_ : dict
        Health of the last ``fit`` / ``partial_fit``: ``n_diverged``,
        ``max_diverged_fraction`` (largest share of particles lost in one
        move), ``n_resamplings``, ``n_annealing_steps`` (per chunk),
        ``adjusted_acceptance`` (mean acceptance of the Metropolis-adjusted
        warm-up moves), ``ess``, ``log_evidence_std``, ``posterior_gap``
        (the particles' mean log posterior below what a short L-BFGS run
        from the best particle reaches; about ``n_params / 2`` at the
        posterior) with its ``posterior_gap_threshold`` and
        ``posterior_gap_n_seen`` (the check reruns when the data seen have
        doubled), ``spread_ratio`` (``-E[(theta - mean) . grad log
        p(theta)] / n_params`` over the particles, about 1 at the posterior
        by Stein's identity, below for a cloud narrower than the posterior)
        with its standard error ``spread_ratio_se``,
        ``importance_log_evidence`` (an independent estimate of the log
        evidence at ``posterior_gap_n_seen`` observations, by importance
        sampling from a Student-t at the posterior mode, symmetrised
        over relabellings for a mixture; NaN where the curvature there is
        not positive definite or with a bounded ``reservoir_size``) with its
        ``importance_log_evidence_std`` and ``importance_ess`` (as a
        fraction of its ``importance_draws``: 256, doubled up to 1024 until
        their ESS reaches a fifth of 256; short of that it is not used) and
        ``importance_z`` (the annealing's log evidence at that point minus
        it, in combined standard deviations), ``importance_excess`` (the
        log of its weights' mean minus the annealing's estimate plus twice
        its std: above log 10 the fit warns whatever the ESS, by Markov's
        inequality), ``importance_lower_bound``
        (True where the particles spread over more than that mode holds:
        the estimate is then of that mode's mass alone, at most the
        evidence up to its error, and combined only with an annealing
        estimate below it, into an error bar no smaller than the
        annealing's), ``annealing_log_evidence``
        and ``annealing_log_evidence_std`` (the annealing's estimate alone)
        with ``birge_ratio`` (of its combination with the check in
        ``log_evidence_``; NaN where none was made), ``missed_mode_log_evidence`` (for
        :class:`~skevidence.EvidenceGMM`: the mass, by importance
        sampling, around the best posterior mode that a search from the
        data found above every particle; NaN where it found none) with
        ``missed_mode_excess`` (as ``importance_excess``), ``spare_weight``
        (for :class:`~skevidence.EvidenceGMM`: the particles' weight where
        a component explains less than a tenth
        of an observation; NaN for the other models or with a bounded
        ``reservoir_size``), and ``warnings``. A
        :class:`~sklearn.exceptions.ConvergenceWarning` is issued with the
        entries of ``warnings`` that say most particles diverged in one
        move, the ESS collapsed, the gap exceeds its threshold, the
        spread ratio is far below 1 (a collapsed cloud), or ``importance_z``
        is beyond 4 in size (the particles lag or miss the posterior), or
        ``missed_mode_excess`` exceeds ``log(10)`` (the particles are
        trapped in a lesser mode: the evidence is too low), or
        ``spare_weight`` exceeds 0.1 (more components than the data
        support: the error bar understates the spread over seeds); a chunk that
        needed more annealing steps than the ``annealing_steps_warning``
        entry of ``engine_options`` (250 by default) is listed there too,
        but warned about by :class:`~skevidence.exceptions.AnnealingWarning`."""

# The fitted attributes that follow ``particles_``.
WEIGHTS_ATTRIBUTES_DOC = """    particle_weights_ : ndarray of shape (n_particles,)
        Their normalised importance weights.
    n_features_in_ : int
        Number of features seen during ``fit``.
    n_samples_seen_ : int
        Number of observations conditioned on."""

_SHARED_PARAMS_DOC = """\
    n_particles : int, default={n_particles}
        Number of weighted particles ``M`` (of each run, with ``n_init >
        1``). The evidence estimator's own floor (weight degeneracy) falls
        with ``M``; {n_particles} keeps it small against the differences
        between models at little cost (:doc:`/benchmarks`). At least 2;
        below 16 a ``ConvergenceWarning`` says the evidence can be far off.
    max_particles : int or None, default=None
        ``None`` uses ``n_particles`` throughout. An integer (at least
        ``n_particles``) turns on Adaptive Resample-Move: a chunk whose
        share of the variance of ``log_evidence_`` grows large (one that
        needs many annealing steps, such as the first, from the prior)
        resamples its particles to twice as many, up to ``max_particles``,
        and back to ``n_particles`` before its last move;
        ``evidence_trace_["n_particles"]`` shows the count per chunk. Off
        by default: for the same CPU time a larger fixed ``n_particles``
        does better (:doc:`/benchmarks`).
    batch_size : int, default=500
        Size of the chunks the data are added in (the paper's 500). Chunks
        end on a grid of the stream, at every multiple of ``batch_size``
        (or growing with the data: ``chunk_growth`` of ``engine_options``,
        on by default for :class:`~skevidence.EvidenceLogisticRegression`), and at the
        end of every ``fit`` / ``partial_fit`` call, so calls that end on
        the grid give the numbers of one ``fit``. The mini-batches of past
        data have their own size (``minibatch_size`` of ``engine_options``).
    n_burnin : int, default=20
        SGHMC steps after every annealing step (the paper's 20). {warmup}
    learning_rate : float, default={learning_rate}
        SGHMC step size. With ``precondition='covariance'`` (the default)
        the step is ``learning_rate`` times the particles' covariance, so it
        is dimensionless and shrinks with the posterior as data arrive;
        otherwise it is ``learning_rate / n`` after ``n`` observations (the
        paper's ``eta = 0.1 / N`` with ``N`` replaced by the count seen so
        far, which a stream knows). :ref:`settings` explains the defaults.
    momentum_decay : float, default=0.2
        Friction ``alpha`` of SGHMC: the fraction of the momentum removed
        at every step (the paper's 0.2).
    target_ess : float, default=0.9
        Target of the adaptive annealing, as a fraction of ``n_particles``:
        each temperature increment is the largest whose conditional ESS
        stays above ``target_ess * n_particles``. The paper's 5 of 10
        particles (0.5) gives fewer annealing steps and a larger error.
    resample_threshold : float, default=0.5
        Resample (systematic) when the ESS of the weights falls below
        ``resample_threshold * n_particles``; ``0`` never resamples (the
        paper's setting, biased low by weight degeneracy).
    reservoir_size : int or None, default=None
        ``None`` keeps every observation for the mini-batches; an integer
        keeps a uniform random sample of that size of the stream
        (reservoir sampling), so memory stays bounded. It must be at least
        ``batch_size`` and the exact warm-up's length (1000 observations;
        2000 for ``EvidenceGMM``): a smaller store biases the evidence.
    device : str, default="cpu"
        Torch device of the particles and data, e.g. ``"cuda"`` (which
        needs a CUDA build of torch; ``fit`` checks that it is available).
    dtype : {{"float64", "float32"}} or numpy / torch dtype, default="{dtype}"
        Precision of the computation (``np.float32`` and ``torch.float32``
        work too); ``float32`` is faster on GPUs{dtype_why}. Inputs larger than
        ``finfo(dtype).max ** 0.25`` in magnitude (about 1e77 in float64,
        4e9 in float32) are rejected: products in the engine would overflow.
    random_state : int, RandomState instance or None, default=None
        Seeds the engine's private ``torch.Generator``; the same value gives
        the same numbers. The global torch seed is never used.
    verbose : int, default=0
        ``1`` shows a progress bar (tqdm, on stderr) advanced at every
        annealing step, with the temperature ``lam`` reached in the chunk,
        the observations seen and the log evidence, continued across
        ``partial_fit`` calls. ``0`` prints nothing.
    engine_options : dict or None, default=None
        Advanced settings of the engine, by the names of the fields of
        :class:`~skevidence.inference.sgais.SGAISConfig`, whose page lists
        every key with its default (e.g. ``{{"n_islands": 4}}``). They
        override the estimator's own per-model engine settings; an
        unknown name, a value of the wrong type or range, or a name that
        is one of the parameters above raises ``ValueError`` at ``fit``.
    method : {{"sgais", "ais", "smc", "nested", "sequential", "sequential-nested", \
"online-nested"}}, default="sgais"
        The evidence estimator: SGAIS or one of the baselines of Cameron
        (2020), on the same model, data and fitted attributes (``n_particles``
        particles or live points, ``n_burnin`` moves; :ref:`methods`):

        * ``"sgais"``: stochastic gradient annealed importance sampling;
          online, at a cost per chunk that does not grow with the data seen;
        * ``"ais"``: annealed importance sampling (thesis Alg. 6) from the
          prior on all data, with Metropolis-adjusted HMC moves;
        * ``"smc"``: sequential importance resampling over chunks (IBIS,
          Alg. 7) with adjusted moves on all data seen; quadratic cost;
        * ``"nested"``: nested sampling (Alg. 5) with constrained HMC;
          ``log_evidence_std_`` is ``sqrt(H / n_live)``;
        * ``"sequential"``: the sequential SG-MCMC estimator (section 4.1),
          one predictive estimate per chunk, no reweighting; biased where
          particles lag the posterior;
        * ``"sequential-nested"``: the same after nested sampling on the
          first ``batch_size`` observations (the thesis's hybrid);
        * ``"online-nested"``: Bayesian updating with nested sampling
          (section 4.3), one run per chunk; quadratic cost.

        ``"ais"`` and ``"nested"`` are not online: ``partial_fit`` keeps the
        data and reruns them from the prior on all data seen (with a
        warning the first time). Every method but ``"sgais"`` and
        ``"sequential"`` keeps all observations (``reservoir_size`` must be
        None), and the adjusted moves adapt their own step size
        (``learning_rate`` is for SGHMC only).
    n_init : int, default={n_init}
        Number of independent runs, each of ``n_particles`` particles from
        its own seed (drawn from ``random_state``), sharing nothing but the
        data. ``log_evidence_`` is their inverse-variance weighted mean and
        ``log_evidence_std_`` its std widened by the Birge ratio where the
        runs disagree beyond their error bars (a ``ConvergenceWarning``
        where the ratio exceeds 4); the posterior pools their particles,
        each run's weights scaled by its evidence. Where the posterior has
        modes the annealing weighs by chance (a mixture's overlapping or
        unneeded components), runs end in different configurations that one
        run's error bar cannot see. ``diagnostics_`` then holds the runs'
        own diagnostics (``init_diagnostics``) and evidences
        (``init_log_evidence``, ``init_log_evidence_std``).{n_init_why}"""


def shared_params_doc(*, learning_rate, warmup, dtype="float64", dtype_why="", n_particles=128,
                      n_init=1, n_init_why=""):
    """The Parameters paragraphs every estimator shares, with its defaults."""
    return fill(_SHARED_PARAMS_DOC, learning_rate=learning_rate, warmup=warmup, dtype=dtype,
                dtype_why=dtype_why, n_particles=n_particles, n_init=n_init,
                n_init_why=n_init_why)


# Sections of the methods' docstrings (indented for a method of a class).
METHOD_DOCS = {
    "X": """Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.""",
    "fit_Xy": """X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or None, default=None
            Targets (``None`` for density estimators).""",
    "batch": """Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs of the batch.
        y : array-like of shape (n_samples,) or None, default=None
            Targets of the batch (``None`` for density estimators).
        classes : array-like of shape (n_classes,) or None, default=None
            Classifiers only: every class of the stream, needed on the first
            call (as in scikit-learn's ``partial_fit``).""",
    "test_Xy": """X : array-like of shape (n_samples, n_features)
            Test inputs.
        y : array-like of shape (n_samples,) or None, default=None
            True targets (ignored for density estimators).""",
    "proba": """Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.""",
    "log_proba": """Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.""",
    "log_density": """Returns
        -------
        log_density : ndarray of shape (n_samples,)
            Log posterior-predictive density of every sample.""",
}


def method_doc(func):
    """Decorator: ``func``'s docstring with its ``{name}`` fields from ``METHOD_DOCS``
    (a KeyError at import names a missing piece)."""
    if func.__doc__ is not None:  # None under python -OO
        fields = {name for _, name, _, _ in string.Formatter().parse(func.__doc__) if name}
        func.__doc__ = fill(func.__doc__, **{name: METHOD_DOCS[name] for name in fields})
    return func
