"""Benchmarks. Every figure is a ratio against a baseline measured in the same run, because the
machines they run on are noisy; absolute numbers are printed for context only."""
