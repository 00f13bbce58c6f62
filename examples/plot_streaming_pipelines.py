"""
==========================================================
Streaming through pipelines: rankings and changing weights
==========================================================

A scikit-learn :class:`~sklearn.pipeline.Pipeline` has no ``partial_fit``,
but :class:`~skevidence.EvidenceSearch` and
:class:`~skevidence.BayesianModelAverager` stream pipelines that end in an
evidence estimator: on the first batch every transformer is fitted, then
frozen, and each batch goes through the frozen transformers into the
estimator's ``partial_fit`` (see :ref:`streaming`). The evidence is then
that of the model on the frozen features.

Part 1 streams the quick start's comparison, a straight line against a
quadratic on the diabetes data, from a CSV file read in chunks, and prints
the ranking after every chunk. Part 2 averages a line and a quadratic on a
stream whose law turns from quadratic to linear half way, with and without
a forgetting factor: without it the weights are those of all the data seen,
so the quadratic keeps the lead it earned; with it, the weights follow the
change (dynamic model averaging, Raftery, Karny & Ettler 2010).
"""

import shutil
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import BayesianModelAverager, EvidenceLinearRegression, EvidenceSearch

# %%
# Part 1: the quick start's comparison, one chunk at a time
# ---------------------------------------------------------
# The diabetes data, written to a CSV file and read back 45 rows at a time
# with pandas (``chunksize``), as a file too large for memory would be. No
# more than one chunk is in memory; the scaler is fitted on the first chunk
# and then frozen, as the estimators' data-scaled priors are.
folder = Path(tempfile.mkdtemp())
load_diabetes(as_frame=True).frame.to_csv(folder / "diabetes.csv", index=False)

model = make_pipeline(PolynomialFeatures(include_bias=False), StandardScaler(),
                      EvidenceLinearRegression(random_state=0))
search = EvidenceSearch(model, {"polynomialfeatures__degree": [1, 2]})

rows, log_bf, log_bf_std = [], [], []
print("  rows   log Z (degree 1)   log Z (degree 2)   P(degree 1 | D)")
for chunk in pd.read_csv(folder / "diabetes.csv", chunksize=45):
    X_chunk, y_chunk = chunk.drop(columns="target").to_numpy(), chunk["target"].to_numpy()
    search.partial_fit(X_chunk, y_chunk)
    r = search.results_
    rows.append(int(r["n_samples_seen"][0]))
    log_bf.append(r["log_evidence"][0] - r["log_evidence"][1])
    log_bf_std.append(np.hypot(*r["log_evidence_std"]))
    print(f"{rows[-1]:6d} {r['log_evidence'][0]:18.2f} {r['log_evidence'][1]:18.2f}"
          f" {r['posterior_probability'][0]:17.4f}")
print("best:", search.best_params_)
shutil.rmtree(folder)

# %%
# The log Bayes factor of the straight line against the quadratic, with its
# Monte Carlo error bar, after every chunk. From the first chunk on, the
# quadratic's 55 extra coefficients cost more than they explain, and the
# gap grows with every chunk: the ranking is that of the one-shot fit of
# the quick start all along. The command line does the same on a file of
# any size:
# ``python -m skevidence compare diabetes.csv --model linear --target target
# --degree 1,2 --chunksize 45 --every 1``.
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.axhline(0.0, color="grey", linewidth=1)
ax.errorbar(rows, log_bf, yerr=2 * np.array(log_bf_std), fmt="o-", capsize=3)
ax.set(xlabel="rows seen", ylabel="log Z(degree 1) - log Z(degree 2)",
       title="The ranking as the chunks come (2 std bars)")
fig.tight_layout()

# %%
# Part 2: weights that follow a changing stream
# ---------------------------------------------
# 4000 rows in batches of 200: quadratic for the first 2000, linear after.
# Two averagers of the same members, a bare linear regression and a
# ``PolynomialFeatures(2)`` pipeline; one keeps the weights of all the data,
# the other forgets with ``forgetting=0.9`` (a batch ``t`` batches back
# counts ``0.9**t`` times in the weights; the members' posteriors do not
# forget).
rng = np.random.default_rng(0)
x = rng.normal(size=(4000, 1))
y = x[:, 0] + rng.normal(scale=0.3, size=4000)
y[:2000] += 3.0 * x[:2000, 0] ** 2
CHANGE = 2000


def members():
    # Few particles keep the example fast; the change is large.
    settings = dict(n_particles=32, n_burnin=5, random_state=0)
    return [("linear", EvidenceLinearRegression(**settings)),
            ("quadratic", make_pipeline(PolynomialFeatures(2),
                                        EvidenceLinearRegression(**settings)))]


averagers = {"without forgetting": BayesianModelAverager(members()),
             "forgetting=0.9": BayesianModelAverager(members(), forgetting=0.9)}
seen, linear_weight = [], {name: [] for name in averagers}
for start in range(0, len(y), 200):
    batch = slice(start, start + 200)
    for name, bma in averagers.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # few particles: trust warnings are not the point
            bma.partial_fit(x[batch], y[batch])
        linear_weight[name].append(bma.weights_[0])
    seen.append(start + 200)

print("  rows   weight of the linear member: " + ",  ".join(averagers))
for k, n in enumerate(seen):
    print(f"{n:6d}   " + "  ".join(f"{linear_weight[name][k]:>20.4f}" for name in averagers))

# %%
# Without forgetting, the evidence of the first 2000 rows against the line
# outweighs what the linear rows after the change add for it, and the
# quadratic member keeps the weight to the end. With forgetting the old
# evidence wears off and the weight moves to the line a few batches after
# the change; ``predict`` mixes the members with these current weights.
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, weights in linear_weight.items():
    ax.plot(seen, weights, "o-", label=name)
ax.axvline(CHANGE, color="grey", linestyle="--", label="law turns linear")
ax.set(xlabel="rows seen", ylabel="weight of the linear member", ylim=(-0.05, 1.05),
       title="Model averaging on a changing stream")
ax.legend()
fig.tight_layout()
plt.show()
