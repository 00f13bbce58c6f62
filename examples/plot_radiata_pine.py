"""
=========================================
A published Bayes factor: radiata pine
=========================================

Which predicts the compression strength of radiata pine better: the
wood's density, or its density adjusted for resin content? The 42
specimens of Williams (1959) are the literature's standard test of
evidence estimators, because with a conjugate prior the two regressions'
evidences are known exactly. Friel & Wyse (2012) state the prior and
publish the log evidences:

* coefficients given the noise variance ``sigma^2``: intercept
  ``N(3000, sigma^2 / 0.06)``, slope on the centred predictor
  ``N(185, sigma^2 / 6)``;
* noise precision ``1 / sigma^2 ~ Gamma(3, rate 2 * 300^2)``.

:class:`~skevidence.EvidenceLinearRegression` takes that prior as it is
written: ``prior_mean`` and ``prior_std`` (in units of the noise, per
coefficient), ``intercept_prior_mean`` and ``intercept_prior_std``, and
``noise_prior_shape`` with ``noise_prior_scale`` (``sigma^2 ~
InvGamma(shape, shape * scale^2)``, so ``shape * scale^2`` is the rate
``2 * 300^2``).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceLinearRegression
from skevidence.datasets import load_radiata_pine

# The published log evidences (Friel & Wyse 2012).
PUBLISHED = {"density": -310.1283, "adjusted_density": -301.7046}

data = load_radiata_pine()
prior = dict(prior_mean=185.0, prior_std=1 / np.sqrt(6.0),
             intercept_prior_mean=3000.0, intercept_prior_std=1 / np.sqrt(0.06),
             noise_prior_shape=3.0, noise_prior_scale=np.sqrt(2 * 300.0**2 / 3.0))

# %%
# One pipeline per predictor: centring (the prior is on the centred
# predictor) and the regression. ``exact_log_evidence`` is the closed form;
# ``log_evidence_`` the sampler's, with its error bar.
results = {}
for k, name in enumerate(data.feature_names):
    X = data.data[:, [k]]
    model = make_pipeline(StandardScaler(with_std=False),
                          EvidenceLinearRegression(**prior, random_state=0))
    model.fit(X, data.target)
    reg = model[-1]
    exact = reg.exact_log_evidence(model[0].transform(X), data.target)
    results[name] = (exact, reg.log_evidence_, reg.log_evidence_std_)
    print(f"{name:<17} published {PUBLISHED[name]:.4f}  closed form {exact:.4f}  "
          f"sampler {reg.log_evidence_:.3f} +- {reg.log_evidence_std_:.3f}")

# %%
# The Bayes factor of adjusted density over density, and its error bar
# (the two fits are independent, so their variances add).
(e1, s1, d1), (e2, s2, d2) = results["density"], results["adjusted_density"]
log_bf, log_bf_std = s2 - s1, np.hypot(d1, d2)
published_log_bf = PUBLISHED["adjusted_density"] - PUBLISHED["density"]
print(f"log Bayes factor: sampler {log_bf:.3f} +- {log_bf_std:.3f}, "
      f"closed form {e2 - e1:.4f}, published {published_log_bf:.4f} "
      f"(odds of about {np.exp(published_log_bf):.0f} to 1)")

# %%
# Each estimate against the published value: the closed form agrees to the
# published digits, the sampler within its error bar.
fig, ax = plt.subplots(figsize=(6, 3))
for i, name in enumerate(data.feature_names):
    exact, estimate, std = results[name]
    ax.errorbar(estimate - PUBLISHED[name], i, xerr=2 * std, fmt="o", capsize=4,
                label="sampler (2 std)" if i == 0 else None)
    ax.plot(exact - PUBLISHED[name], i, "kx", label="closed form" if i == 0 else None)
ax.axvline(0.0, color="grey", linestyle=":")
ax.set(yticks=[0, 1], yticklabels=data.feature_names, ylim=(-0.7, 1.7),
       xlabel="log evidence - published value")
ax.legend(loc="upper right")
fig.tight_layout()
plt.show()
