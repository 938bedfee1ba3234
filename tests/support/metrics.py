"""Reading a ``/metrics`` scrape in tests: every sample keyed by its name and label set."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(base: str, **headers: str) -> Samples:
    answer = httpx.get(f"{base}/metrics", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value, 0 when absent (a counter never incremented has no sample)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def has(samples: Samples, name: str, **labels: str) -> bool:
    return (name, frozenset(labels.items())) in samples
