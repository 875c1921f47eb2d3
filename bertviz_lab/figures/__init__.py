"""Plotly figure builders (plain JSON-ready dicts) and tables; no model code."""
