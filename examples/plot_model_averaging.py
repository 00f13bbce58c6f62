"""
=====================================================
Bayesian model averaging with BayesianModelAverager
=====================================================

Instead of keeping the single most probable model, Bayesian model averaging
predicts with the mixture of all candidates' posterior predictives, each
weighted by its posterior probability ``p(M | D)``, obtained from the
evidences. :meth:`EvidenceSearch.to_averager
<skevidence.model_selection.EvidenceSearch.to_averager>` turns a fitted grid
into a :class:`~skevidence.ensemble.BayesianModelAverager`.

Part 1 averages polynomial regressions of degree 1..5 fitted to few, noisy
observations of a sine, where no degree is clearly best, and compares the
averaged predictive (mean and std) with that of the best single model.
Part 2 is where the classification case (``EvidenceLogisticRegression`` over
a ``prior_std`` grid) goes once that estimator is available; it is marked
below.

The script prints the weights and the test errors and saves
``plot_model_averaging.png`` in the current directory (or shows it when a
display is available).
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


def sine(x):
    return 2.0 * np.sin(1.5 * x)


# %%
# Data: 40 noisy training points, a dense test grid.
rng = np.random.default_rng(1)
x_train = rng.uniform(-2.5, 2.5, size=40)
y_train = sine(x_train) + 0.5 * rng.normal(size=x_train.size)
x_test = np.linspace(-2.5, 2.5, 200)
y_test = sine(x_test)

# %%
# Part 1: fit every degree, then average them by evidence.
pipe = make_pipeline(
    PolynomialFeatures(include_bias=False),
    StandardScaler(),
    EvidenceLinearRegression(prior_std=2.0, noise_std=0.5, n_particles=64, batch_size=40,
                             random_state=0),
)
degrees = list(range(1, 6))
search = EvidenceSearch(pipe, {"polynomialfeatures__degree": degrees})
search.fit(x_train[:, None], y_train)
averager = search.to_averager()

print("degree  P(M | D)")
for degree, weight in zip(degrees, averager.weights_):
    print(f"{degree:6d}  {weight:8.4f}")

best_mean, best_std = search.predict(x_test[:, None], return_std=True)
avg_mean, avg_std = averager.predict(x_test[:, None], return_std=True)
print(f"best single model (degree {search.best_params_['polynomialfeatures__degree']}): "
      f"test RMSE {np.sqrt(np.mean((best_mean - y_test) ** 2)):.3f}")
print(f"evidence-weighted average:             "
      f"test RMSE {np.sqrt(np.mean((avg_mean - y_test) ** 2)):.3f}")

# %%
# Part 2 (after the logistic estimator lands): averaging classifiers over a
# prior scale grid. Replace this comment by
#
#     from skevidence import EvidenceLogisticRegression
#     from sklearn.datasets import make_classification
#     Xc, yc = make_classification(n_samples=400, n_features=5, random_state=0)
#     clf_search = EvidenceSearch(EvidenceLogisticRegression(random_state=0),
#                                 {"prior_std": [0.1, 0.3, 1.0, 3.0, 10.0]}).fit(Xc, yc)
#     clf_avg = clf_search.to_averager()
#     print(clf_avg.weights_, clf_avg.predict_proba(Xc[:5]))
#
# and add a panel with the posterior probabilities over prior_std.

# %%
# Plot the weights and the two predictives.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.bar(degrees, averager.weights_)
ax1.set(xlabel="polynomial degree", ylabel="P(degree | D)", title="Posterior model probability")
ax2.plot(x_test, y_test, "k--", label="truth")
ax2.plot(x_train, y_train, "k.", label="data")
for mean, std, label in [(best_mean, best_std, "best single model"),
                         (avg_mean, avg_std, "model average")]:
    (line,) = ax2.plot(x_test, mean, label=label)
    ax2.fill_between(x_test, mean - 2 * std, mean + 2 * std, color=line.get_color(), alpha=0.2)
ax2.set(xlabel="x", ylabel="y", title="Predictive mean and 2 std")
ax2.legend(fontsize=8)
fig.tight_layout()
if matplotlib.get_backend().lower() == "agg":
    fig.savefig("plot_model_averaging.png", dpi=100)
    print("saved plot_model_averaging.png")
else:
    plt.show()
