"""pytest fixtures for a MiniKafka broker (registered through the
``pytest11`` entry point, so installing the package is enough):

- ``kafka_broker``: a fresh broker for each test, stopped and removed after
  it; ``@pytest.mark.kafka_broker(brokers=[1, 2, 3], args=[...])`` sets its
  broker ids and flags.
- ``kafka_broker_session``: one single broker shared by the whole session
  (cheaper; tests keep to their own topics).
- ``kafka_broker_factory``: starts brokers with any settings inside a test;
  all are stopped after it.

Each is an :class:`mk_server.Broker`: ``.bootstrap`` for
``bootstrap.servers``, ``.create_topic()``, ``.restart()``, ``.kill()``,
``.cli()``, ``.log_tail()``.
"""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

from mk_server import Broker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka_broker(brokers=[1], args=[], kafka=True, env={}): settings of this test's kafka_broker fixture",
    )


@pytest.fixture
def kafka_broker_factory() -> Iterator[Callable[..., Broker]]:
    """``start(brokers=[1], args=[], data_dir=None, kafka=True, env=None)``
    starts and returns a broker; every one is closed after the test."""
    started: list[Broker] = []

    def start(**settings) -> Broker:
        broker = Broker(**settings)
        started.append(broker)
        return broker.start()

    yield start
    for broker in reversed(started):
        broker.close()


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, kafka_broker_factory: Callable[..., Broker]) -> Broker:
    """A fresh broker for this test (settings from the ``kafka_broker`` mark)."""
    marker = request.node.get_closest_marker("kafka_broker")
    return kafka_broker_factory(**(marker.kwargs if marker else {}))


@pytest.fixture(scope="session")
def kafka_broker_session() -> Iterator[Broker]:
    """One broker for the whole session."""
    with Broker() as broker:
        yield broker
