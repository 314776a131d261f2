-- Job-scoped traces (jobs/traces.py, the otel extra): the W3C traceparent of the span that
-- submitted the job (/summon, errand job submit), so the worker's claim and attempts and the
-- transport's deliveries join the submitter's trace in other processes. NULL when traces are off.
ALTER TABLE job ADD COLUMN traceparent text
    CHECK (traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
