"""The operator surfaces: the CLI, the one assembly of a long-running process, health and
metrics, inspection and pruning, and the wiring that opens an engine."""
