"""Analysis over the store: pandas frames, rates with confidence intervals, report tables."""
