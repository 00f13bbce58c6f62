"""
==========================================================
Choosing model complexity by evidence with EvidenceSearch
==========================================================

:class:`~skevidence.model_selection.EvidenceSearch` fits every candidate of a
parameter grid once on all the data and ranks them by their Bayesian
evidence ``log p(D | M)``. The evidence penalises complexity by itself, so
no data are held out for cross-validation.

Part 1 compares polynomial degrees 1..7 of a Bayesian linear regression on
data from a cubic. Part 2 is where the mixture-model grid (``EvidenceGMM``
with ``n_components`` 1..7 on 3-cluster data) goes once that estimator is
available; it is marked below.

The script prints the ``results_`` table and saves ``plot_model_complexity.png``
in the current directory (or shows it when a display is available).
"""

import os

import matplotlib

if not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import EvidenceLinearRegression
from skevidence.model_selection import EvidenceSearch

# %%
# Data: a cubic with unit noise, 400 observations.
rng = np.random.default_rng(0)
x = rng.uniform(-2.0, 2.0, size=400)
y = 0.5 * x**3 - x + rng.normal(size=x.size)
X = x[:, None]

# %%
# Part 1: polynomial degree of a Bayesian linear regression.
# The features are standardised after the expansion so that one prior scale
# suits every degree.
degrees = list(range(1, 8))
pipe = make_pipeline(
    PolynomialFeatures(include_bias=False),
    StandardScaler(),
    EvidenceLinearRegression(prior_std=2.0, n_particles=64, learning_rate=0.02, random_state=0),
)
search = EvidenceSearch(pipe, {"polynomialfeatures__degree": degrees}).fit(X, y)

print(" degree   log evidence   log BF vs best   P(M | D)   rank")
for i, degree in enumerate(degrees):
    r = search.results_
    print(f"{degree:7d} {r['log_evidence'][i]:14.2f} {r['log_bayes_factor'][i]:16.2f}"
          f" {r['posterior_probability'][i]:10.4f} {r['rank'][i]:6d}")
print("best:", search.best_params_)

# %%
# Part 2 (after the mixture estimator lands): the number of mixture
# components. Replace this comment by
#
#     from skevidence.mixture import EvidenceGMM
#     from sklearn.datasets import make_blobs
#     Xg, _ = make_blobs(n_samples=600, centers=3, random_state=0)
#     gmm_search = EvidenceSearch(EvidenceGMM(random_state=0),
#                                 {"n_components": list(range(1, 8))}).fit(Xg)
#
# and add a panel plotting gmm_search.results_["posterior_probability"].

# %%
# Plot the log evidence and the posterior model probabilities.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
ax1.plot(degrees, search.results_["log_evidence"], "o-")
ax1.set(xlabel="polynomial degree", ylabel="log evidence", title="Evidence")
ax2.bar(degrees, search.results_["posterior_probability"])
ax2.set(xlabel="polynomial degree", ylabel="P(degree | D)", title="Posterior model probability")
fig.tight_layout()
if matplotlib.get_backend().lower() == "agg":
    fig.savefig("plot_model_complexity.png", dpi=100)
    print("saved plot_model_complexity.png")
else:
    plt.show()
