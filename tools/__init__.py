"""Helper scripts of the book harness (used by tasks.py; not part of the calibtut package)."""
