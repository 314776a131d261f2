-- The operator's job search keeps its function (job_matching) and its queries, but not the four
-- indexes 0011 made for it. Each one was an entry written by every submit and, since a state
-- change is never a HOT update of a job, by every claim and every end, for a screen nobody
-- reads yet. The dashboard that will read it (issue "An operator's window") chooses its indexes
-- with their cost to submits and claims measured beside it. Until then a search scans.
DROP INDEX IF EXISTS job_kind_recent;
DROP INDEX IF EXISTS job_group_recent;
DROP INDEX IF EXISTS job_recent;
DROP INDEX IF EXISTS job_search_trgm;
