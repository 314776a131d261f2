-- Outbox delivery leases carry their owner and a token, fenced like attempts: a transport
-- process that lost its lease (it stalled past it and another process claimed the rows) cannot
-- record a delivery, a retry or a dead letter for rows it no longer holds.

ALTER TABLE outbox
    ADD COLUMN lease_owner text,
    ADD COLUMN lease_token uuid;
