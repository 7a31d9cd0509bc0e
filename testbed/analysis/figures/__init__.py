"""`testbed plot` and `testbed graphs`: the numbers behind each figure and its matplotlib drawing."""
