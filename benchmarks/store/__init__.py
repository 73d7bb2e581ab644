"""Stores: the embedded store at scale, the backends compared, PostgreSQL and its replicas."""
