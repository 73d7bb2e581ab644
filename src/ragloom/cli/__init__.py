"""The ``ragloom`` command line: one module per command group."""
