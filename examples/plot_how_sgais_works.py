"""
=================================
How SGAIS works, on one real fit
=================================

SGAIS builds the log evidence up chunk by chunk,
``log p(D) = sum_k log p(C_k | C_1..C_{k-1})``. The particles, a weighted
sample of the posterior of the data seen so far, are carried from one
posterior to the next along a tempering path ``p(C_k | theta)^lam``, from
``lam = 0`` (the posterior without the chunk) to ``lam = 1`` (with it). Each
annealing (tempering) step

1. **reweights**: it picks the largest increment of ``lam`` that keeps the
   effective sample size (ESS) of the new weights above ``target_ess``
   times the particles, and multiplies the weights by
   ``p(C_k | theta)^delta``; the log of their mean is that step's share of
   the log evidence;
2. **resamples** when the ESS of the accumulated weights has fallen below
   ``resample_threshold`` times the particles: heavy particles are copied,
   light ones dropped, and the weights start afresh;
3. **moves** the particles on the tempered posterior, so that copies
   spread out again: Metropolis-adjusted moves on the exact posterior
   during the warm-up (the first 1000 observations), SGHMC with
   mini-batches of the past data afterwards.

The first chunk starts from the prior and needs many steps; later chunks
start from a posterior that already predicts them well and need few. This
example fits :class:`~skevidence.EvidenceLinearRegression` to 3000
observations in chunks of 250 and reads every stage of the run from the
fitted ``evidence_trace_`` (one entry per chunk) and ``diagnostics_``.
Linear regression has a closed-form evidence, so the estimate can be held
against the truth.
"""

import matplotlib.pyplot as plt
import numpy as np

from skevidence import EvidenceLinearRegression
from skevidence.datasets import make_linear_regression

# %%
# The paper's linear model (5 features, coefficients drawn from the prior,
# unit noise), 128 particles, chunks of 250 observations.
X, y = make_linear_regression(3000, n_features=5, random_state=0)
reg = EvidenceLinearRegression(batch_size=250, random_state=0).fit(X, y)

trace = reg.evidence_trace_
n_seen = trace["n_seen"]
M = reg.n_particles
print(f"log evidence {reg.log_evidence_:.2f} +- {reg.log_evidence_std_:.2f}")
print("chunk  n_seen  steps  adjusted moves  resamplings  ESS after")
for k in range(n_seen.size):
    print(f"{k:5d} {n_seen[k]:7d} {trace['n_annealing_steps'][k]:6d}"
          f" {trace['n_adjusted_moves'][k]:15d} {trace['n_resamplings'][k]:12d}"
          f" {trace['ess'][k]:10.1f}")
diag = reg.diagnostics_
print(f"diverged particles: {diag['n_diverged']}, mean acceptance of the adjusted moves: "
      f"{diag['adjusted_acceptance']:.2f}, warnings: {diag['warnings']}")

# %%
# The exact log evidence of the first ``n`` observations, under the same
# (fitted) prior, for every chunk boundary.
exact = np.array([reg.exact_log_evidence(X[:n], y[:n]) for n in n_seen])

# %%
# The run, chunk by chunk
# -----------------------
#
# * **Annealing steps.** The first chunk, from the prior, takes dozens of
#   steps; as the posterior narrows, a chunk adds less information
#   relative to what is known and the steps fall to a few. Each step is
#   followed by a move: Metropolis-adjusted in the warm-up, SGHMC after it
#   (a chunk taken in a single step may skip its move while the ESS stays
#   high, as the weighted particles still represent the posterior).
# * **ESS and resampling.** The ESS of the weights after each chunk, with
#   the resampling threshold; the numbers mark chunks in which the
#   particles were resampled (several times in the first chunk, rarely
#   later).
# * **Evidence per chunk.** ``log p(C_k | C_<k)`` per observation, the
#   estimate and the exact value: close to the log density of the unit
#   noise, ``-log(2 pi e) / 2 = -1.42``, and varying from chunk to chunk
#   with the data in it, far more than the two differ.
# * **Error of the running estimate** against the exact value, with the
#   estimate's own ``2 log_evidence_std`` band. The std grows slowly as
#   the chunks' variances add up. It measures the Monte Carlo noise only,
#   not a bias of the sampler. Here the error stays within the band, and
#   most of it, like most of the annealing steps, comes from the first
#   chunk, the one that starts from the prior.
sizes = np.diff(n_seen, prepend=0)
left = n_seen - sizes  # each chunk's bar spans the observations it added
fig, axes = plt.subplots(4, 1, figsize=(7, 10), sharex=True)

ax = axes[0]
adjusted = trace["n_adjusted_moves"]
unadjusted = trace["n_annealing_steps"] - adjusted
ax.bar(left, adjusted, width=0.9 * sizes, align="edge",
       label="step + adjusted move (warm-up)")
ax.bar(left, unadjusted, width=0.9 * sizes, align="edge", bottom=adjusted,
       label="step + SGHMC move")
ax.set(yscale="log", ylabel="annealing steps", title="Annealing steps per chunk")
ax.set_yticks([1, 2, 5, 10, 20, 50], labels=["1", "2", "5", "10", "20", "50"])
ax.legend(fontsize=8)

ax = axes[1]
ax.plot(n_seen, trace["ess"], "o-", label="ESS after the chunk")
ax.axhline(reg.resample_threshold * M, color="grey", linestyle="--",
           label="resampling threshold")
for n, count, ess in zip(n_seen, trace["n_resamplings"], trace["ess"]):
    if count:
        ax.annotate(f"{count}x", (n, ess), textcoords="offset points", xytext=(0, 6),
                    ha="center", fontsize=8, color="C3")
ax.set(ylim=(0, 1.1 * M), ylabel=f"ESS (of {M})", title="Weights, and resamplings per chunk")
ax.legend(fontsize=8, loc="lower right")

ax = axes[2]
ax.plot(n_seen, np.diff(trace["log_evidence"], prepend=0.0) / sizes, "o-", label="SGAIS")
ax.plot(n_seen, np.diff(exact, prepend=0.0) / sizes, "k+", markersize=10, label="exact")
ax.set(ylabel="nats per observation", title="log p(chunk | data before it), per observation")
ax.legend(fontsize=8)

ax = axes[3]
error = trace["log_evidence"] - exact
band = 2 * trace["log_evidence_std"]
ax.fill_between(n_seen, -band, band, color="C0", alpha=0.2, label="+- 2 log_evidence_std")
ax.plot(n_seen, error, "o-", color="C0", label="estimate - exact")
ax.axhline(0.0, color="k", linewidth=0.8)
ax.set(xlabel="observations seen", ylabel="nats", title="Running log evidence: error")
ax.legend(fontsize=8, loc="lower left")
fig.tight_layout()
plt.show()
