"""Outbox delivery to Discord: every message the bot keeps about a job, each with one owner.

``loop`` runs one actor per job; each actor's ``round`` claims the job's notices and shows
them. The /summon answer (``answer``), the job's thread (``thread``), its progress message
(``progress``) and its notices (``notices``) are each edited by their own module alone, over the
``discord_binding`` row (``bindings``), the bot's request queue (``discord_io``) and its pacing,
pure logic without I/O (``pacer``).
"""
