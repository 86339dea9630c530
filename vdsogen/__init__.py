"""vdsogen: generate, validate and test Linux vDSO images from declarative specs."""

__version__ = "0.1.0"
