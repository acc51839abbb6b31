"""Cycle estimates per ISA tier (scalar, DSP, MVE, Ethos-U). Not implemented yet; the shape
predicates it will share with the kernels live in kernels_py (``is_convolve_1x1_s8_fast``, ...).
"""
