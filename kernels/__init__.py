"""triton-mps kernel library: Triton kernels written for this project, each with a torch
reference. See README.md for the index. Modules are imported on demand (`from kernels import
softmax`), so importing the package compiles nothing and needs no device."""
