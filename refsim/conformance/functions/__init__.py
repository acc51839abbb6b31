"""One adapter module per kernels_py family; each registers its CMSIS-NN functions on import."""
