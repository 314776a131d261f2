"""Outbox delivery to Discord: every message the bot keeps about a job, each with one owner.

``loop`` runs one actor per job (its state: ``followed``); each actor runs ``round`` after
``round``, which takes the job's render lease, claims its notices with the job as it is now, and
hands them to the owners of the messages: the job's thread (``thread``), its progress message
(``progress``), its notices (``notices``) and the /summon answer (``answer``), each the only
module that posts or edits its message. They share the ``discord_binding`` row (``bindings``),
the bot's request queue (``discord_io``) and its pacing, pure logic without I/O (``pacer``).
"""
