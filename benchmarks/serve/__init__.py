"""The HTTP server: searches and answers through the API, tenancy."""
