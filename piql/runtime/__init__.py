"""The runtime: a deployed plan on the embedded store (SQLite), serving bounded reads and
maintained writes. It depends on the planner; the planner never imports it."""
