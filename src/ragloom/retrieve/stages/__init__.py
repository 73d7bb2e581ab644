"""Pipeline stages: a plan and hits in, hits out. One module per technique."""
