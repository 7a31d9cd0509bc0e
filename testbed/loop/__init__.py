"""The turn loop: participants that take a turn (assistant, simulated user) and why a conversation ends."""
