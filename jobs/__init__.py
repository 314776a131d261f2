"""Errand job engine: durable, transport-agnostic job records, state machine and runtime."""
