"""ragloom against the tools users would pick instead (their requirements: requirements-*.txt here)."""
