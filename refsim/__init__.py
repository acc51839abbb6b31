"""refsim: the golden model for int8 inference on Arm Cortex-M and Ethos-U."""

__version__ = "0.1.0"
