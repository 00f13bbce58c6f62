"""
=================================================
Digits: how many principal components to classify
=================================================

Handwritten digits 0, 1, 2 and 3 from scikit-learn's digits data (8 x 8
pixel images). A pipeline standardises the pixels, projects them on their
first principal components and classifies with
:class:`~skevidence.EvidenceLogisticRegression`. The evidence
``log p(labels | images)`` compares pipelines with different numbers of
components: the features differ, but they are all functions of the same
images, and the labels are the same.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceLogisticRegression, EvidenceSearch
from skevidence.plotting import plot_model_posterior

digits = load_digits(n_class=4)
# a subset keeps the example fast
X, y = digits.data[:400], digits.target[:400]

pipe = make_pipeline(
    StandardScaler(),
    PCA(random_state=0),
    StandardScaler(),
    EvidenceLogisticRegression(n_particles=32, n_burnin=10, random_state=0),
)
search = EvidenceSearch(pipe, {"pca__n_components": [1, 2, 4, 8]}).fit(X, y)

r = search.results_
print("components   log evidence +- std   P(M | D)   training accuracy")
for k, est in enumerate(search.candidates_):
    print(f"{r['params'][k]['pca__n_components']:10d} {r['log_evidence'][k]:12.2f}"
          f" +- {r['log_evidence_std'][k]:4.2f} {r['posterior_probability'][k]:10.4f}"
          f" {est.score(X, y):19.3f}")

# %%
# One component cannot separate four digits. On this grid the evidence
# rises with every component up to the largest, 8, each step by tens of
# nats, far beyond the error bars: every added component separates the
# digits better by more than the prior volume of its four weights costs.
# Where the rise ends would take a grid beyond 8 components to tell.
axes = plot_model_posterior(search)
axes[0].figure.tight_layout()

# %%
# The digits in the plane of the first two components.
Z = search.candidates_[1][:2].transform(X)
fig, ax = plt.subplots(figsize=(4.5, 4))
for digit in range(4):
    ax.scatter(*Z[y == digit].T, s=8, label=str(digit))
ax.set(xlabel="component 1", ylabel="component 2", title="First two components")
ax.legend(title="digit")
fig.tight_layout()
plt.show()
