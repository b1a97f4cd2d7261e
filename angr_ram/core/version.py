"""angr-ram's version (also ``angr_ram.__version__``)."""

__version__ = "0.1.0"
