-- A cancel's reason is the requester's own words (docs/state-machine.md, "Cancelling"): who
-- asked is job.cancel_requested_by and the event's actor. Until now the engine wrote
-- "cancelled by <actor>: <words>" into job.reason and the events' reasons, and transports parsed
-- it back; those texts become the words alone (" (forced)" stays, as new forced cancels write
-- it), so old and new jobs read alike. A cancel without words had none: NULL.

UPDATE job SET reason = nullif(
    regexp_replace(
        regexp_replace(reason, '^cancelled by (requester|operator|system)(: )?', ''),
        '^ \(forced\)$', 'forced'),
    '')
WHERE reason ~ '^cancelled by (requester|operator|system)(: | \(forced\)|$)';

UPDATE event SET reason = nullif(
    regexp_replace(
        regexp_replace(reason, '^cancelled by (requester|operator|system)(: )?', ''),
        '^ \(forced\)$', 'forced'),
    '')
WHERE reason ~ '^cancelled by (requester|operator|system)(: | \(forced\)|$)';
