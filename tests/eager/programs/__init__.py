"""Small faithful versions of public PyTorch programs, each a ``run(torch)`` function.

Each program is written as its public original is, against a module passed in as
``torch`` (``eager`` or real PyTorch), with tiny sizes and synthetic data. ``run``
returns a dict of the deterministic parts (shapes, dtypes, printed forms, values
that do not depend on random draws) that ``test_public_programs_run.py`` compares
between the two.
"""
