"""Judges: label stored simulated-user turns after generation (follow-up and failure modes)."""
