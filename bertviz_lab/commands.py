"""Registers the subcommands that live in other modules (kept out of __main__ to stay small)."""
