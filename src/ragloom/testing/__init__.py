"""Reusable test helpers: conformance suites and fakes of model servers (``ragloom.testing.fakes``)."""
