"""The command line, ``bertviz-lab`` / ``python -m bertviz_lab``: ``dispatch`` holds the parser
tree, ``main`` and the one error handler; one module per command family holds its commands
(``analysis``, ``scoring``, ``explanation``, ``interventions``, ``corpus``, ``mlm``), and
``options`` what they share (model options and the default-checkpoint rule, number parsers, ``emit``)."""
from .dispatch import EXAMPLES, build_parser, main, main_exit

__all__ = ["EXAMPLES", "build_parser", "main", "main_exit"]
