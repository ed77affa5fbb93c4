"""Test helpers (tiny synthetic checkpoints)."""
