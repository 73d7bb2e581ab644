"""The job queue in PostgreSQL (``stores/postgres/jobs.py``) against the queue conformance suite,
on a real server (pgserver): leases on the database's clock, a holder that lost its lease changing
nothing, the uploaded bytes kept for the next attempt."""

from __future__ import annotations

import uuid

import pytest

from ragloom.testing.jobs import JobQueueConformance


class TestPostgresJobQueue(JobQueueConformance):
    LEASE = 0.5

    @pytest.fixture
    def queue(self, postgres_server):
        from ragloom.stores.postgres.jobs import PostgresJobs

        queue = PostgresJobs(postgres_server.url(), "q" + uuid.uuid4().hex[:10])  # its own rows in the shared table
        yield queue
        queue.close()


def test_an_index_may_not_take_the_name_of_the_shared_tables(postgres_server, tmp_path):
    from ragloom.config import Config
    from ragloom.errors import ConfigError
    from ragloom.stores.base import create_store

    config = Config.from_dict({"store": {"backend": "postgres", "postgres": {"url": postgres_server.url("shared")}}})
    with pytest.raises(ConfigError) as caught:
        create_store(tmp_path, config)
    message = str(caught.value)
    assert "\n" not in message and "'shared' is reserved" in message and "choose another" in message
