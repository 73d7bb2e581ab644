"""Ingest: rate, memory, formats, hostile files, remote sources."""
