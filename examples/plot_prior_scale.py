"""
===============================
Choosing the scale of the prior
===============================

The evidence belongs to a model *with its prior*. A prior far narrower
than the true coefficients cannot fit the data; a prior far wider spreads
its probability over coefficients the data rule out and pays about
``log(prior width / posterior width)`` per coefficient. The evidence is
therefore largest for a prior scale that matches the coefficients, while
the fit to the training data keeps improving as the prior widens.

:class:`~skevidence.EvidenceSearch` ranks a grid of ``prior_std`` values;
the exact evidence of linear regression draws the whole curve.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone

from skevidence import EvidenceLinearRegression, EvidenceSearch
from skevidence.datasets import make_linear_regression

# %%
# 100 observations, 5 features, coefficients drawn from N(0, 1): the true
# prior scale is 1.
X, y = make_linear_regression(100, n_features=5, prior_std=1.0, random_state=2)
reg = EvidenceLinearRegression(noise_std=1.0, n_particles=64, random_state=0)
prior_stds = np.geomspace(0.01, 100.0, 9)
search = EvidenceSearch(reg, {"prior_std": prior_stds}).fit(X, y)

dense = np.geomspace(0.01, 100.0, 60)
exact = [clone(reg).set_params(prior_std=s).exact_log_evidence(X, y) for s in dense]
train_mse = [np.mean((est.predict(X) - y) ** 2) for est in search.candidates_]

r = search.results_
print("prior_std   log evidence +- std   P(M | D)   training MSE")
for k, s in enumerate(prior_stds):
    print(f"{s:9.3f} {r['log_evidence'][k]:12.2f} +- {r['log_evidence_std'][k]:4.2f}"
          f" {r['posterior_probability'][k]:10.4f}"
          f" {train_mse[k]:14.3f}")
print(f"best prior_std: {search.best_params_['prior_std']:.3g}")

# %%
# The training error falls as the prior widens and then stays flat; the
# evidence rises, peaks near the true scale, and falls again: about
# ``6 log 10 = 13.8`` nats per decade of prior width for the 6 coefficients
# (intercept included) once the prior is wider than the posterior.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.plot(dense, exact, "-", color="grey", label="exact")
ax1.plot(prior_stds, r["log_evidence"], "o", label="SGAIS")
ax1.axvline(1.0, color="k", linestyle=":", label="true scale")
ax1.set(xscale="log", xlabel="prior_std", ylabel="log evidence", title="Evidence")
ax1.legend()
ax2.plot(prior_stds, train_mse, "o-")
ax2.set(xscale="log", xlabel="prior_std", ylabel="mean squared error",
        title="Fit to the training data")
fig.tight_layout()
plt.show()
