"""Training data from judged runs (`testbed export`): SFT conversations and DPO pairs for user-turn generation."""
