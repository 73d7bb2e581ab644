"""Retrievers: a plan in, ranked candidates out. One module per technique."""
