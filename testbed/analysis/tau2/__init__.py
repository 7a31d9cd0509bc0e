"""τ² analysis: task metrics, the τ² report, comparison columns, simulated-user faults, figures."""
