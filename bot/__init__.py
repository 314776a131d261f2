"""Errand Discord transport: slash commands, threads, progress messages and notices."""
