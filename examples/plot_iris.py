"""
=========================================
Iris: clusters without labels, and labels
=========================================

The iris measurements (150 flowers, 4 measurements, 3 species) twice:

* without the species, :class:`~skevidence.EvidenceGMM` asks how many
  clusters the measurements support;
* with them, :class:`~skevidence.EvidenceLogisticRegression` asks which
  prior scale of the weights the data support.

Both in a :class:`~sklearn.preprocessing.StandardScaler` pipeline.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceGMM, EvidenceLogisticRegression, EvidenceSearch
from skevidence.plotting import plot_model_posterior

X, species = load_iris(return_X_y=True)
# Shuffle: the file is sorted by species, and every chunk of a stream
# should look like the whole.
order = np.random.default_rng(0).permutation(len(X))
X, species = X[order], species[order]

# %%
# Clusters: 1 to 4 diagonal Gaussians on the standardised measurements.
gmm = make_pipeline(StandardScaler(), EvidenceGMM(n_particles=32, n_burnin=10, random_state=0))
clusters = EvidenceSearch(gmm, {"evidencegmm__n_components": [1, 2, 3, 4]}).fit(X)
best = clusters.best_estimator_
r = clusters.results_
for K, log_z, std, p in zip([1, 2, 3, 4], r["log_evidence"], r["log_evidence_std"],
                            r["posterior_probability"]):
    print(f"n_components {K}: log evidence {log_z:.2f} +- {std:.2f}, P(K | D) {p:.3f}")
print("most probable n_components:", clusters.best_params_["evidencegmm__n_components"])
print("agreement of the clusters with the species (adjusted Rand index):",
      round(adjusted_rand_score(species, best.predict(X)), 3))

# %%
# Species: logistic regression over a grid of prior scales.
clf = make_pipeline(StandardScaler(),
                    EvidenceLogisticRegression(n_particles=32, n_burnin=10, random_state=0))
scales = EvidenceSearch(clf, {"evidencelogisticregression__prior_std": [0.3, 1.0, 3.0, 10.0]})
scales.fit(X, species)
r = scales.results_
for s, log_z, std in zip([0.3, 1.0, 3.0, 10.0], r["log_evidence"], r["log_evidence_std"]):
    print(f"prior_std {s:4.1f}: log evidence {log_z:.2f} +- {std:.2f}")
print("training accuracy of the best:", round(scales.score(X, species), 3))

# %%
# The clusters of the most probable mixture on two of the measurements, and
# the posterior over the number of components and over the prior scale.
fig, ax = plt.subplots(figsize=(5, 3.8))
ax.scatter(X[:, 2], X[:, 3], c=best.predict(X), s=12, cmap="viridis")
ax.set(xlabel="petal length (cm)", ylabel="petal width (cm)",
       title="Clusters of the most probable mixture")
fig.tight_layout()
for search in (clusters, scales):
    axes = plot_model_posterior(search)
    axes[0].figure.tight_layout()
plt.show()
