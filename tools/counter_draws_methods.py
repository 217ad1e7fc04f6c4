"""A plugin for ``tools/draws_check.py``: the paper's ``class`` and SCARF's ``random`` again, under
names of their own, so that the screen trains them (with ``draws: counter``) beside the stored
generator-drawn ones it compares with."""

from tcclib.method.registry import register_method

register_method("class_counter", "pseudo", label="class-conditioned (pseudo), counter draws")
register_method("random_counter", "column", label="random (SCARF), counter draws")
