"""Islands of particles: resampling within each island keeps its mass."""

import numpy as np

from skevidence.inference import islands


def test_island_resampling_keeps_each_island_mass_and_stays_inside():
    rng = np.random.default_rng(1)
    log_W = rng.standard_normal(30) * 2
    log_W -= np.logaddexp.reduce(log_W)
    starts = islands.island_starts(30, 4)
    which = np.array([True, False, True, True])
    index, new = islands.systematic_resample_islands(log_W, 0.37, starts, which)
    np.testing.assert_allclose(islands.island_log_mass(new, starts),
                               islands.island_log_mass(log_W, starts), rtol=1e-12)
    island_of = np.repeat(np.arange(4), islands.island_sizes(30, starts))
    assert np.array_equal(island_of[index], island_of)
    assert np.array_equal(index[island_of == 1], np.flatnonzero(island_of == 1))
