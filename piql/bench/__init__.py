"""Benchmarks: commands that print figures and write JSON and PNG, never timed unit tests."""
