"""bert/sources/: see docs/ARCHITECTURE.md."""
