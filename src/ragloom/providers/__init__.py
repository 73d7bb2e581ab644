"""Clients for model servers: one shared HTTP layer (``http``), one module per API."""
