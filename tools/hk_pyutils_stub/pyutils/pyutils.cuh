#pragma once
/* Stand-in for HipKittens' pybind11 glue: device-only builds need the bound
   functions instantiated, not Python. */
#include "pyutils/util.cuh"
struct hk_fake_module {
  const char *d;
  const char *&doc() { return d; }
};
#define PYBIND11_MODULE(name, m) void hk_module_##name(hk_fake_module &m)
namespace kittens { namespace py {
template <auto F, typename... A> void bind_function(hk_fake_module &, const char *, A...) { (void)F; }
template <auto F, typename... A> void bind_kernel(hk_fake_module &, const char *, A...) { (void)F; }
} }
