"""bert/loading/: see docs/ARCHITECTURE.md."""
