"""Replaying stored runs in the terminal (`testbed replay`) and labelling their user turns by hand."""
