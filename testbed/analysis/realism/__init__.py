"""Realism: simulated users' turns against real users' turns on the same contexts."""
