"""
======================================================
Evidence against cross-validation for choosing a model
======================================================

Cross-validation scores a model on held-out folds: ``k`` fits per
candidate. The evidence scores it by its one-step-ahead predictions on the
training data, ``log p(y) = sum_n log p(y_n | y_1..y_{n-1})``, with one
fit per candidate. Here both choose the polynomial degree of a regression
of a sine, on 60 noisy observations.

The two answer slightly different questions: cross-validation, which
model predicts new data best (the larger model costs it nothing if it
predicts as well); the evidence, which model the data support (the
larger model costs the prior volume of the coefficients it does not need).
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import EvidenceLinearRegression, EvidenceSearch

rng = np.random.default_rng(3)
x = rng.uniform(-3.0, 3.0, size=60)
y = np.sin(x) + 0.3 * rng.normal(size=x.size)
X = x[:, None]
degrees = list(range(1, 10))

# The noise level is known here (0.3) and given to the model: the evidence
# of a model that assumed much larger noise would hardly tell the degrees
# apart, since it would see every misfit as noise.
pipe = make_pipeline(
    PolynomialFeatures(include_bias=False),
    StandardScaler(),
    EvidenceLinearRegression(prior_std=1.0, noise_std=0.3, n_particles=32, random_state=0),
)

start = time.perf_counter()
search = EvidenceSearch(pipe, {"polynomialfeatures__degree": degrees}).fit(X, y)
evidence_time = time.perf_counter() - start

# %%
# 5-fold cross-validated mean squared error of the posterior-mean
# prediction, for the same pipelines.
start = time.perf_counter()
folds = KFold(5, shuffle=True, random_state=0)
cv_mse = [-cross_val_score(pipe.set_params(polynomialfeatures__degree=d), X, y, cv=folds,
                           scoring="neg_mean_squared_error").mean() for d in degrees]
cv_time = time.perf_counter() - start

# %%
# Each log evidence comes with its Monte Carlo error bar,
# ``results_["log_evidence_std"]``. A degree is less probable than the best
# only when its log Bayes factor exceeds about twice the combined error
# bar of the two, ``2 sqrt(s_k^2 + s_best^2)``; otherwise the two are
# indistinguishable at this error bar.
best_cv = degrees[int(np.argmin(cv_mse))]
r = search.results_
best = int(np.argmax(r["log_evidence"]))
print("degree   log evidence +- std   log BF vs best +- 2 std   5-fold CV MSE")
for k, degree in enumerate(degrees):
    bar = 2 * np.hypot(r["log_evidence_std"][k], r["log_evidence_std"][best])
    gap = r["log_evidence"][k] - r["log_evidence"][best]
    verdict = ("best" if k == best else "less probable" if -gap > bar
               else "indistinguishable at this error bar")
    print(f"{degree:6d} {r['log_evidence'][k]:12.2f} +- {r['log_evidence_std'][k]:4.2f}"
          f" {gap:13.2f} +- {bar:5.2f} {cv_mse[k]:15.4f}  {verdict}")
print(f"evidence: degree {search.best_params_['polynomialfeatures__degree']} "
      f"({len(degrees)} fits, {evidence_time:.1f} s)")
print(f"cross-validation: degree {best_cv} ({5 * len(degrees)} fits, {cv_time:.1f} s)")

# %%
# Both criteria reject degrees 1 and 2, the evidence by some forty times
# its error bar: a sine over [-3, 3] needs at least a cubic term. From
# degree 3 up, the cross-validated error is flat within its noise, and the
# log evidences lie within about two nats of each other: some gaps to the
# best are indistinguishable at this error bar and the others exceed it
# by little, so the evidence does not single out one degree among them
# either (their posterior probabilities are spread over them; more
# ``n_particles`` would shrink the error bars). The evidence got there
# with one fit per candidate, each on all 60 points; cross-validation
# with five, each on 48.
fig, ax1 = plt.subplots(figsize=(6, 4))
ax1.errorbar(degrees, r["log_evidence"] - r["log_evidence"][best],
             yerr=2 * np.asarray(r["log_evidence_std"]), fmt="o-", color="C0", capsize=3)
ax1.set(xlabel="polynomial degree")
ax1.set_ylabel("log evidence - best (+- 2 std)", color="C0")
ax2 = ax1.twinx()
ax2.plot(degrees, cv_mse, "s--", color="C1")
ax2.set_ylabel("5-fold CV mean squared error", color="C1")
ax1.set_title("Evidence and cross-validation")
fig.tight_layout()
plt.show()
