"""rankmap's mapping side: machine model, hierarchical partitioning, metrics, writers."""
