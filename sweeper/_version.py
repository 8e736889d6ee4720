"""The version of sweeper, which every study records: here, below every module that reads
it, so none of them imports the package's front door (``sweeper/__init__.py``)."""

__version__ = "0.1.0"
