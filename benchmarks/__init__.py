"""Benchmarks: modules run by ``kvfabric bench`` as ``python -m benchmarks.NAME``."""
