"""The operator surfaces: the CLI, health and metrics, inspection and pruning, and the wiring
that opens an engine."""
