"""The job store (being split into one module per group of verbs; see submit.py for now)."""

from jobs.engine.store.submit import *  # noqa: F403
from jobs.engine.store.submit import (  # noqa: F401
    COMPLETED_DESPITE_CANCEL,
    Finish,
    JobStore,
    Quotas,
    Submission,
    _bulk_arguments,
    _insert_many_without_keys,
    _reaper_due_sql,
    redact_error,
)
