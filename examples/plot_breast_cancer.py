"""
================================================
Breast cancer: evidence and held-out performance
================================================

scikit-learn's breast cancer data: 569 tumours, 30 features, benign or
malignant. A Bayesian logistic regression in a
:class:`~sklearn.preprocessing.StandardScaler` pipeline, over a grid of
prior scales of its 62 weights. The evidence on the training set is set
beside the log loss on held-out tumours: the prior scale the evidence
prefers also predicts new tumours well, without a validation set.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceLogisticRegression, EvidenceSearch

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=300, stratify=y,
                                                    random_state=0)
prior_stds = [0.1, 0.3, 1.0, 3.0, 10.0, 30.0]
clf = make_pipeline(StandardScaler(),
                    EvidenceLogisticRegression(n_particles=32, n_burnin=10, random_state=0))
search = EvidenceSearch(clf, {"evidencelogisticregression__prior_std": prior_stds})
search.fit(X_train, y_train)

r = search.results_
test_log_loss = [log_loss(y_test, est.predict_proba(X_test)) for est in search.candidates_]
print("prior_std   log evidence +- std   P(M | D)   test log loss   test accuracy")
for k, s in enumerate(prior_stds):
    accuracy = accuracy_score(y_test, search.candidates_[k].predict(X_test))
    print(f"{s:9.2f} {r['log_evidence'][k]:12.2f} +- {r['log_evidence_std'][k]:4.2f}"
          f" {r['posterior_probability'][k]:10.4f}"
          f" {test_log_loss[k]:15.4f} {accuracy:15.3f}")

# %%
# With 30 correlated features and 300 tumours, a wide prior lets the weights
# grow along directions the data barely constrain: the evidence pays for
# that prior volume, and the held-out log loss for the overconfident
# predictions.
fig, ax1 = plt.subplots(figsize=(5.5, 3.8))
ax1.plot(prior_stds, r["log_evidence"], "o-", color="C0")
ax1.set(xscale="log", xlabel="prior_std")
ax1.set_ylabel("log evidence (training)", color="C0")
ax2 = ax1.twinx()
ax2.plot(prior_stds, test_log_loss, "s--", color="C1")
ax2.set_ylabel("log loss (held out)", color="C1")
ax1.set_title("Breast cancer: evidence and held-out log loss")
fig.tight_layout()
plt.show()
