"""bert/encoder/: see docs/ARCHITECTURE.md."""
