"""Which heads track syntax: treebank reading, head scoring, reports."""
