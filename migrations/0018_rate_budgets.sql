-- Rate budgets shared by the fleet (docs/kinds.md, "Rate limits"): what costs money or draws a
-- provider's 429s, such as the agent kind's model requests and tokens per minute, is taken
-- from one budget in PostgreSQL that every worker shares. A scope's row is the lock its takers
-- queue on; its uses in the last window say what is left.

CREATE TABLE rate_scope (
    scope text PRIMARY KEY
);

CREATE TABLE rate_use (
    scope  text NOT NULL,
    at     timestamptz NOT NULL,
    amount bigint NOT NULL CHECK (amount >= 0)
);
CREATE INDEX rate_use_recent ON rate_use (scope, at);
