"""The engine: job states and the transition table, the one compare-and-set path, the store
(every SQL statement about jobs), the outbox, migrations and the database connection."""
