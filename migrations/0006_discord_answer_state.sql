-- The state the /summon answer shows. The answer is kept current through the interaction's
-- token while it lives (15 minutes, in memory only); after that a terminal state is written to
-- it once with the bot's token, and this column says whether that happened.

ALTER TABLE discord_binding ADD COLUMN answer_state job_state;
