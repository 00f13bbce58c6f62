"""
=============================
Polynomial degree by evidence
=============================

Which polynomial degree do the data support? A higher degree always fits
the training data at least as well, so the likelihood alone would choose
the highest. The evidence ``log p(y | X)`` does not: each extra coefficient
must buy more fit than the prior volume it spends.
:class:`~skevidence.EvidenceSearch` fits every degree once, on all the
data, and ranks them.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import EvidenceLinearRegression, EvidenceSearch
from skevidence.plotting import plot_model_posterior

# %%
# 200 observations of a cubic with unit noise. The features are
# standardised after the expansion, so that one prior scale suits every
# degree.
rng = np.random.default_rng(0)
x = rng.uniform(-2.0, 2.0, size=200)
y = 0.5 * x**3 - x + rng.normal(size=x.size)
X = x[:, None]

degrees = list(range(1, 8))
pipe = make_pipeline(
    PolynomialFeatures(include_bias=False),
    StandardScaler(),
    EvidenceLinearRegression(prior_std=2.0, n_particles=64, random_state=0),
)
search = EvidenceSearch(pipe, {"polynomialfeatures__degree": degrees}).fit(X, y)

r = search.results_
print("degree   log evidence   log BF vs best   P(M | D)")
for k, degree in enumerate(degrees):
    print(f"{degree:6d} {r['log_evidence'][k]:14.2f} {r['log_bayes_factor'][k]:16.2f}"
          f" {r['posterior_probability'][k]:10.4f}")
print("best:", search.best_params_)

# %%
# Degrees below 3 miss the cubic term and lose by tens of nats; degrees
# above 3 fit no better and lose about a nat each: the price of a
# coefficient the data do not need. Degrees 3 to 5 all keep some posterior
# probability (:ref:`model_averaging` uses them all).
fig, ax = plt.subplots(figsize=(5, 3.5))
grid = np.linspace(-2.0, 2.0, 200)[:, None]
mean, std = search.predict(grid, return_std=True)
ax.plot(x, y, "k.", markersize=3, label="data")
ax.plot(grid, mean, label=f"degree {search.best_params_['polynomialfeatures__degree']}")
ax.fill_between(grid[:, 0], mean - 2 * std, mean + 2 * std, alpha=0.2, label="2 std")
ax.set(xlabel="x", ylabel="y", title="Most probable degree")
ax.legend()
fig.tight_layout()

# %%
# :func:`~skevidence.plotting.plot_model_posterior` draws the log Bayes
# factors against the best degree and the posterior probabilities.
axes = plot_model_posterior(search)
axes[0].figure.tight_layout()
plt.show()
