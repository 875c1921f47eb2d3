"""bert/runtime/: see docs/ARCHITECTURE.md."""
