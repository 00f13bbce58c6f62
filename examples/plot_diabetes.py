"""
================================
Which features predict diabetes?
================================

scikit-learn's diabetes data: 442 patients, 10 baseline measurements, and
a measure of disease progression one year later. Four linear models use
nested sets of the measurements, in a :class:`~sklearn.pipeline.Pipeline`
with a :class:`~sklearn.preprocessing.StandardScaler`, as one would fit
them in practice. :class:`~skevidence.BayesianModelAverager` fits them all
on the same data and weights them by their evidence.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_diabetes
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import BayesianModelAverager, EvidenceLinearRegression
from skevidence.plotting import plot_model_posterior

# %%
# The target is standardised too: the evidences are then those of the
# standardised target, which changes every candidate's log evidence by the
# same constant and leaves the comparison as it was, while the priors on
# the coefficients suit it.
data = load_diabetes(as_frame=True)
X = data.frame[data.feature_names]
y = (data.target - data.target.mean()) / data.target.std()


def linear_model(columns, degree=1):
    select = ColumnTransformer([("select", "passthrough", columns)])
    steps = [select, StandardScaler()]
    if degree > 1:
        steps += [PolynomialFeatures(degree, include_bias=False), StandardScaler()]
    reg = EvidenceLinearRegression(prior_std=0.5, n_particles=64, random_state=0)
    return make_pipeline(*steps, reg)


candidates = [
    ("bmi", linear_model(["bmi"])),
    ("bmi, bp, s5", linear_model(["bmi", "bp", "s5"])),
    ("all 10", linear_model(data.feature_names)),
    ("all 10, pairs", linear_model(data.feature_names, degree=2)),
]
bma = BayesianModelAverager(candidates).fit(X, y)

# %%
# Cross-validation, for comparison: 3 fits per candidate instead of one.
# The evidence prefers all ten measurements to the three strongest alone,
# by a few nats, several times the two estimates' combined error bar (the
# ``+- std`` column); the squared terms and interactions (65
# coefficients) cost far more prior volume than the fit they add.
# Cross-validation ranks the candidates in the same order.
print("model            log evidence +- std   P(M | D)   3-fold CV R^2")
for (name, model), log_z, std, weight in zip(candidates, bma.log_evidences_,
                                             bma.log_evidence_stds_, bma.weights_):
    r2 = cross_val_score(model, X, y, cv=3).mean()
    print(f"{name:15s} {log_z:12.2f} +- {std:4.2f} {weight:10.4f} {r2:15.3f}")

axes = plot_model_posterior(bma)
axes[0].figure.tight_layout()

# %%
# The averaged predictive against the truth on the training patients, with
# its two-standard-deviation band: most of the spread of the target is
# noise that no linear model of these measurements explains.
mean, std = bma.predict(X, return_std=True)
order = np.argsort(mean)
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(mean[order], y.to_numpy()[order], "k.", markersize=3, label="patients")
ax.plot(mean[order], mean[order], label="prediction")
ax.fill_between(mean[order], mean[order] - 2 * std[order], mean[order] + 2 * std[order],
                alpha=0.2, label="2 std")
ax.set(xlabel="predicted (standardised)", ylabel="observed (standardised)",
       title="Model average on the diabetes data")
ax.legend()
fig.tight_layout()
plt.show()
