"""τ²-bench's domains as a scenario kind: tool-using assistants, goal-driven simulated users, rewards by τ²'s evaluator."""
