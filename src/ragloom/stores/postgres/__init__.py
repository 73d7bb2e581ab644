"""The PostgreSQL store: every piece of an index's state in one database (pgvector for vectors)."""
