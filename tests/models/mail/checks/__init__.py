"""Tests of the checks that judge received mail (models.mail.checks)."""
