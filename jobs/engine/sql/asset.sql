-- Assets: what a job leaves behind (results, logs), kept after it ends.

-- name: asset_put
-- Store (or replace) an asset from the attempt holding the lease; no row when it lost the lease.
INSERT INTO asset (job_id, attempt_id, name, content_type, size, data, path)
SELECT j.id, :attempt_id, :name, :content_type, :size, :data, :path
FROM job j WHERE j.id = :job_id AND j.current_attempt_id = :attempt_id
ON CONFLICT (job_id, name) DO UPDATE
    SET attempt_id = excluded.attempt_id, content_type = excluded.content_type,
        size = excluded.size, data = excluded.data, path = excluded.path, created_at = now()
RETURNING id;

-- name: asset_list_by_job
-- A job's assets (without their content), oldest first.
SELECT name, content_type, size, path IS NOT NULL AS in_file, attempt_id, created_at
FROM asset WHERE job_id = :job_id ORDER BY id;

-- name: asset_get
-- One asset with its content or file path.
SELECT name, content_type, size, data, path FROM asset WHERE job_id = :job_id AND name = :name;
