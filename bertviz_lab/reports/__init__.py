"""Offline HTML reports: figures (``figures/``) and tables of results, written as files. Above
``figures/``, so the analyses below never import drawing code."""
