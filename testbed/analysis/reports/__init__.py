"""The run report and the framework comparison: frames per condition and their rendering."""
