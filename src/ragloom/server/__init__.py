"""Serving ragloom to other programs: the HTTP API (``ragloom serve``), the MCP server
(``ragloom mcp``) and folder watching (``ragloom watch``).

``service.IndexService`` is the one object they all share: a pool of read connections for
searches and one writer for ingest and removal. The HTTP app and the MCP server are thin
layers over it; ``schemas`` derives their request and response models from ragloom's own
dataclasses. FastAPI, uvicorn, mcp and watchfiles are imported only by the modules that
need them (``pip install 'ragloom[server]'``, ``'ragloom[mcp]'``).
"""
