"""Reading a Prometheus scrape in tests: every sample by name and labels."""

from __future__ import annotations

import requests
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of the exposition `text`, keyed by (sample name, label pairs)."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def scrape(url: str) -> Samples:
    """GET `url` (a metrics endpoint) and parse it; fail unless it answers 200."""
    response = requests.get(url, timeout=10)
    assert response.status_code == 200, response.text
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample `name` with exactly `labels`; 0 when absent (a series not yet touched)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def series(samples: Samples, prefix: str) -> dict[str, int]:
    """How many series each sample name starting with `prefix` has."""
    counts: dict[str, int] = {}
    for name, _labels in samples:
        if name.startswith(prefix):
            counts[name] = counts.get(name, 0) + 1
    return counts


def counted(name: str, **labels: str) -> float:
    """The sample `name` with `labels` in this process's default registry (the embedded
    mode's and the tests' metrics); 0 when absent."""
    return REGISTRY.get_sample_value(name, labels) or 0.0
