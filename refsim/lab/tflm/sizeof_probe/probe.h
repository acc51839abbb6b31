// sizeof probe helpers: PROBE(name, T) defines byte arrays whose lengths are sizeof(T) and
// alignof(T); VALUE(name, n) one whose length is n. Compiled with -c only (never linked, never
// run); refsim/lab/tflm/sizeof_probe.py reads the lengths back with `nm -S`. Our own code.
#pragma once
#define REFSIM_PROBE(name, ...)                                                                   \
  extern "C" __attribute__((used)) const unsigned char refsim_sizeof__##name[sizeof(__VA_ARGS__)] = {}; \
  extern "C" __attribute__((used)) const unsigned char refsim_alignof__##name[alignof(__VA_ARGS__)] = {};
#define REFSIM_VALUE(name, n) \
  extern "C" __attribute__((used)) const unsigned char refsim_value__##name[(n)] = {};
