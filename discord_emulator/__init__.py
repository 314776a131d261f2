"""A local emulator of Discord REST API v10 and gateway, for running the real discord.py client."""
