"""The run loop: a scenario's plan run episode by episode into the store, sweeps, and framework comparisons."""
