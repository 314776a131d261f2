-- The application commands last synced to each scope, as a hash of their payload: commands sync
-- only when they changed (bot/client.py). Loaded by bot/queries.py.

-- name: command_sync_get
-- The hash of the command payload last synced to this scope.
SELECT hash FROM discord_command_sync WHERE scope = :scope;

-- name: command_sync_set
-- Remember the command payload just synced to this scope.
INSERT INTO discord_command_sync (scope, hash) VALUES (:scope, :hash)
ON CONFLICT (scope) DO UPDATE SET hash = excluded.hash, synced_at = now();
