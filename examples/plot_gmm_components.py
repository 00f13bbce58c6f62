"""
============================
Number of mixture components
============================

The likelihood of a Gaussian mixture grows with every component added, so
it cannot choose their number. The evidence of
:class:`~skevidence.EvidenceGMM` can: it rises steeply up to the number of
clusters the data have and then falls slowly, since an unneeded component
costs only the prior volume it wastes.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_blobs

from skevidence import EvidenceGMM, EvidenceSearch

# %%
# 600 points from three round clusters of unit variance. EvidenceGMM sets
# its priors from the scale of the first batch (``mean_prior_``, the mean of
# each feature, and ``variance_scale_``, a tenth of its variance), so the
# data need no rescaling; the paper's fixed priors are ``mean_prior=0.0,
# variance_scale=1.0``. 32 particles instead of the default 128 keep the
# grid fast at the price of larger error bars, printed with every log
# evidence (``results_["log_evidence_std"]``).
X, labels = make_blobs(n_samples=600, centers=[[-3.0, -2.0], [3.0, -2.0], [0.0, 3.0]],
                       cluster_std=1.0, random_state=0)
n_components = [1, 2, 3, 4, 5]
search = EvidenceSearch(EvidenceGMM(n_particles=32, random_state=0),
                        {"n_components": n_components}).fit(X)

r = search.results_
i_best = int(np.argmax(r["log_evidence"]))
print(f"{'K':>2} {'log evidence +- std':>20} {'vs best +- 2 std':>17} {'P(K | D)':>8}  verdict")
for k, K in enumerate(n_components):
    # A gap to the best is resolved only beyond twice the combined error bar.
    bar = 2 * np.hypot(r["log_evidence_std"][k], r["log_evidence_std"][i_best])
    gap = r["log_evidence"][k] - r["log_evidence"][i_best]
    verdict = ("best" if k == i_best else "less probable" if -gap > bar
               else "a tie at this error bar")
    print(f"{K:2d} {r['log_evidence'][k]:12.2f} +- {r['log_evidence_std'][k]:4.2f}"
          f" {gap:8.2f} +- {bar:5.2f} {r['posterior_probability'][k]:8.4f}  {verdict}")
print("best:", search.best_params_)

# %%
# The point estimates come from the highest-weight particle (label switching
# makes posterior means over particles meaningless); the order of the
# components is arbitrary. A symmetric-log axis shows both the steep rise
# (hundreds of nats) and the slow fall beyond three components (a few nats).
best = search.best_estimator_
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.scatter(X[:, 0], X[:, 1], c=best.predict(X), s=5, cmap="viridis")
t = np.linspace(0.0, 2.0 * np.pi, 100)
for mean, var in zip(best.means_, best.covariances_):
    # 2 standard deviations of each (diagonal) component
    ax1.plot(mean[0] + 2 * np.sqrt(var[0]) * np.cos(t),
             mean[1] + 2 * np.sqrt(var[1]) * np.sin(t), "r-")
ax1.set(xlabel="x1", ylabel="x2", aspect="equal",
        title=f"Most probable mixture, K = {search.best_params_['n_components']}")
ax2.plot(n_components, r["log_bayes_factor"], "o-")
ax2.set_yscale("symlog", linthresh=1.0)
ax2.set(xlabel="n_components", ylabel="log evidence - best", title="Log Bayes factor vs best")
fig.tight_layout()
plt.show()
