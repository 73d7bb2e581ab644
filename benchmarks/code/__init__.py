"""Source code: CoSQA, developers' queries, the ingest rate of a package."""
