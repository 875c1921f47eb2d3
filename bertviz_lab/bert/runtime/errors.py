"""The error a person can act on: the input (or the choice of method for this model) cannot be analysed as
given, and the message says what to change. It lives with the encoder so that the encoder's own refusals
(a method that does not fit the model's layers) reach the page as such; ``lab.InputError`` is this class."""
from __future__ import annotations


class InputError(ValueError):
    """The input cannot be analysed as given; the message tells a person what to change."""
