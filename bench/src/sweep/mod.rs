//! Sweeps: many (instance, algorithm, settings, seed) runs, each stored as it finishes.
