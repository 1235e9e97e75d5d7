"""graphmode's version, in the lowest layer so that the disk cache can stamp its files with it
without importing eager (which re-exports it as `eager.__version__`). A constant, not
importlib.metadata: asking the metadata scans sys.path (~2 ms per process)."""

__version__ = "0.1.0"
