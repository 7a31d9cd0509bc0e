"""Scenario kinds: how a scenario spec expands into episodes and how one item's episodes run."""
