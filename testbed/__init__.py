"""usersim testbed: models take turns as assistant and simulated user; every user turn is stored and measured."""

__version__ = "0.1.0"
