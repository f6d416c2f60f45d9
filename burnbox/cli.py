"""The `burnbox` command: serve (all-in-one embedded), web, worker, clock, mailin, migrate."""
