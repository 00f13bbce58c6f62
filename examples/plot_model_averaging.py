"""
===================================================
Bayesian model averaging with BayesianModelAverager
===================================================

Instead of keeping the single most probable model, Bayesian model averaging
predicts with the mixture of all candidates' posterior predictives, each
weighted by its posterior probability ``p(M | D)``, obtained from the
evidences. :meth:`EvidenceSearch.to_averager
<skevidence.EvidenceSearch.to_averager>` turns a fitted grid
into a :class:`~skevidence.ensemble.BayesianModelAverager`.

Part 1 averages polynomial regressions of degree 1..5 fitted to few, noisy
observations of a sine, where the best degree leaves some weight to the
others, and compares the
averaged predictive (mean and std) with that of the best single model.
Part 2 averages Bayesian logistic regressions over a grid of prior scales
``prior_std`` on a small 3-class training set and compares the averaged
class probabilities with those of the best single model on held-out data
(accuracy and log loss).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.model_selection import EvidenceSearch


def sine(x):
    return 2.0 * np.sin(1.5 * x)


def verdict(log_evidences, stds, k):
    """Candidate ``k`` against the best, at twice their combined error bar.

    Each log evidence is a Monte Carlo estimate with standard deviation
    ``stds[k]``; a gap to the best smaller than ``2 sqrt(s_k^2 + s_best^2)``
    is within the noise of the two estimates.
    """
    best = int(np.argmax(log_evidences))
    gap = log_evidences[k] - log_evidences[best]
    bar = 2 * np.hypot(stds[k], stds[best])
    if k == best:
        return gap, bar, "best"
    return gap, bar, "less probable" if -gap > bar else "indistinguishable at this error bar"


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
    # Known noise 0.5; prior_std is in units of the noise: coefficients N(0, 2^2).
    EvidenceLinearRegression(prior_std=4.0, noise_std=0.5, n_particles=64, batch_size=40,
                             random_state=0),
)
degrees = list(range(1, 6))
search = EvidenceSearch(pipe, {"polynomialfeatures__degree": degrees})
search.fit(x_train[:, None], y_train)
averager = search.to_averager()

# Every log evidence is printed with its error bar (``log_evidence_stds_``)
# and compared with the best at twice their combined error bar.
print("degree   log evidence +- std   log BF vs best +- 2 std   P(M | D)")
for k, degree in enumerate(degrees):
    gap, bar, word = verdict(averager.log_evidences_, averager.log_evidence_stds_, k)
    print(f"{degree:6d} {averager.log_evidences_[k]:12.2f} +- "
          f"{averager.log_evidence_stds_[k]:4.2f} {gap:13.2f} +- {bar:5.2f}"
          f" {averager.weights_[k]:10.4f}  {word}")

best_mean, best_std = search.predict(x_test[:, None], return_std=True)
avg_mean, avg_std = averager.predict(x_test[:, None], return_std=True)
print(f"best single model (degree {search.best_params_['polynomialfeatures__degree']}): "
      f"test RMSE {np.sqrt(np.mean((best_mean - y_test) ** 2)):.3f}")
print(f"evidence-weighted average:             "
      f"test RMSE {np.sqrt(np.mean((avg_mean - y_test) ** 2)):.3f}")

# %%
# Part 2: average classifiers over the prior scale.
# A 3-class problem with 10 features (4 informative, 2 redundant, 4 noise)
# and 5% flipped labels; 200 observations to train on, so the prior matters,
# and 2000 held out to measure the predictive.
Xc, yc = make_classification(n_samples=2200, n_features=10, n_informative=4, n_redundant=2,
                             n_classes=3, n_clusters_per_class=1, class_sep=0.8, flip_y=0.05,
                             random_state=0)
Xc_train, Xc_test, yc_train, yc_test = train_test_split(Xc, yc, train_size=200, stratify=yc,
                                                        random_state=0)

# The prior N(0, prior_std^2) is the same for every weight, so the features
# are standardised first: one prior scale then means the same for all of
# them. The scaler is fitted on the training data only, like the classifier.
# The grid is fine (a factor 1.3 between neighbours) so that neighbouring
# candidates have similar evidences and several of them keep some weight;
# on a coarser grid the best one takes nearly all of it.
prior_stds = np.geomspace(0.3, 3.0, 9)
clf_pipe = make_pipeline(
    StandardScaler(),
    EvidenceLogisticRegression(n_particles=64, random_state=0),
)
clf_search = EvidenceSearch(clf_pipe, {"evidencelogisticregression__prior_std": prior_stds})
clf_search.fit(Xc_train, yc_train)
clf_avg = clf_search.to_averager()

print()
print("prior_std   log evidence +- std   log BF vs best +- 2 std   P(M | D)   test log loss")
member_log_loss = []
for k, prior_std in enumerate(prior_stds):
    proba = clf_search.candidates_[k].predict_proba(Xc_test)
    member_log_loss.append(log_loss(yc_test, proba, labels=clf_search.classes_))
    gap, bar, word = verdict(clf_avg.log_evidences_, clf_avg.log_evidence_stds_, k)
    print(f"{prior_std:9.3f} {clf_avg.log_evidences_[k]:12.2f} +- "
          f"{clf_avg.log_evidence_stds_[k]:4.2f} {gap:13.2f} +- {bar:5.2f}"
          f" {clf_avg.weights_[k]:10.4f} {member_log_loss[-1]:15.4f}  {word}")

# The best single model predicts with its own posterior predictive; the
# averager mixes the candidates' class probabilities with weights p(M | D).
# The two neighbours of the best prior scale are indistinguishable from it
# at this error bar (the table above), and they predict almost like it, so
# the gain is small: averaging mainly guards against betting on one scale
# when the evidence cannot tell them apart, and it costs nothing extra here
# since the search has already fitted every candidate.
best_prior_std = clf_search.best_params_["evidencelogisticregression__prior_std"]
for label, model in [(f"best single model (prior_std {best_prior_std:.3f})", clf_search),
                     ("evidence-weighted average", clf_avg)]:
    proba = model.predict_proba(Xc_test)
    accuracy = accuracy_score(yc_test, model.classes_[np.argmax(proba, axis=1)])
    print(f"{label:38s} test accuracy {accuracy:.3f}, "
          f"log loss {log_loss(yc_test, proba, labels=model.classes_):.4f}")
clf_avg_log_loss = log_loss(yc_test, clf_avg.predict_proba(Xc_test), labels=clf_avg.classes_)

# %%
# Plot the weights and the two predictives of the regression, then the
# weights over the prior scale and the held-out log loss of every classifier
# next to that of the average.
fig, ((ax1, ax2), (ax3, ax4)) = plt.subplots(2, 2, figsize=(10, 7.6))
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

# Bars of constant width on the log axis: a factor around each grid value.
widths = prior_stds * (10 ** 0.05 - 10 ** -0.05)
ax3.bar(prior_stds, clf_avg.weights_, width=widths)
ax3.set(xscale="log", xlabel="prior_std", ylabel="P(prior_std | D)",
        title="Classifiers: posterior model probability")
ax4.plot(prior_stds, member_log_loss, "o-", label="single model")
ax4.axhline(clf_avg_log_loss, color="C1", linestyle="--", label="evidence-weighted average")
ax4.axvline(best_prior_std, color="grey", linestyle=":", label="largest evidence")
ax4.set(xscale="log", xlabel="prior_std", ylabel="test log loss",
        title="Classifiers: held-out log loss")
ax4.legend(fontsize=8)
fig.tight_layout()
plt.show()
