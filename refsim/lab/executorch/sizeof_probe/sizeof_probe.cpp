// sizeof probe: the 32-bit sizes and alignments of the ExecuTorch runtime structs that
// Method::load allocates from the method and temp allocators.
//
// Compiled (never linked, never run) with arm-none-eabi-g++ against the headers the
// executorch wheel ships under executorch/include/executorch/runtime/. Every PROBE(name, T)
// defines two byte arrays whose lengths are sizeof(T) and alignof(T); refsim reads them back
// with `arm-none-eabi-nm -S` (refsim/lab/executorch/sizeof_probe.py). Our own code.
//
// Two structs are private to runtime/executor/method.cpp (Chain, BackendDelegate) and have no
// public header. Their member lists are transcribed below from method.cpp (pytorch/executorch
// main @ cff6f4dd32, identical in member types to the 1.5.1 sources) using the public member
// types; the compiler then sizes them like any other struct.

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/freeable_buffer.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/core/exec_aten/util/tensor_dimension_limit.h>
#include <executorch/runtime/core/portable_type/tensor_impl.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/platform_memory_allocator.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/kernel/operator_registry.h>

#include <cstdint>
#include <optional>

namespace et = ::executorch::runtime;
namespace aten = ::executorch::aten;

namespace refsim_probe {

// method.cpp: struct Chain { const executorch_flatbuffer::Chain* s_chain_;
//   Span<InstructionArgs> argument_lists_; OpFunction* kernels_; };
struct Chain {
  const executorch_flatbuffer::Chain* s_chain_;
  et::Span<et::InstructionArgs> argument_lists_;
  et::OpFunction* kernels_;
};

// method.cpp: class BackendDelegate final { ... FreeableBuffer segment_;
//   const BackendInterface* backend_; DelegateHandle* handle_; };
struct BackendDelegate {
  et::FreeableBuffer segment_;
  const et::BackendInterface* backend_;
  et::DelegateHandle* handle_;
};

}  // namespace refsim_probe

#define REFSIM_PROBE(name, ...)                                                          \
  extern "C" __attribute__((used)) const unsigned char refsim_sizeof__##name[sizeof(__VA_ARGS__)] = {}; \
  extern "C" __attribute__((used)) const unsigned char refsim_alignof__##name[alignof(__VA_ARGS__)] = {};

// Values table and the list representations parse_values builds.
REFSIM_PROBE(EValue, et::EValue)
REFSIM_PROBE(EValue_ptr, et::EValue*)
REFSIM_PROBE(bool, bool)
REFSIM_PROBE(int64_t, int64_t)
REFSIM_PROBE(BoxedEvalueList_int64, et::BoxedEvalueList<int64_t>)
REFSIM_PROBE(BoxedEvalueList_Tensor, et::BoxedEvalueList<aten::Tensor>)
REFSIM_PROBE(BoxedEvalueList_OptionalTensor, et::BoxedEvalueList<std::optional<aten::Tensor>>)
REFSIM_PROBE(OptionalTensor, std::optional<aten::Tensor>)
REFSIM_PROBE(ArrayRef_bool, aten::ArrayRef<bool>)
REFSIM_PROBE(ArrayRef_double, aten::ArrayRef<double>)
REFSIM_PROBE(ArrayRef_char, aten::ArrayRef<char>)
// Tensors (tensor_parser_portable.cpp parseTensor).
REFSIM_PROBE(Tensor, aten::Tensor)
REFSIM_PROBE(TensorImpl, aten::TensorImpl)
REFSIM_PROBE(SizesType, aten::SizesType)
REFSIM_PROBE(DimOrderType, aten::DimOrderType)
REFSIM_PROBE(StridesType, aten::StridesType)
// Instruction chain (Method::init) and operator resolution (Method::resolve_operator).
REFSIM_PROBE(Chain, refsim_probe::Chain)
REFSIM_PROBE(BackendDelegate, refsim_probe::BackendDelegate)
REFSIM_PROBE(OpFunction, et::OpFunction)
REFSIM_PROBE(InstructionArgs, et::InstructionArgs)
REFSIM_PROBE(TensorMeta, et::TensorMeta)
REFSIM_PROBE(PlatformMemoryAllocator, et::internal::PlatformMemoryAllocator)
// Objects the application holds (static storage or stack), not allocator pools.
REFSIM_PROBE(Program, et::Program)
REFSIM_PROBE(Method, et::Method)
REFSIM_PROBE(MemoryManager, et::MemoryManager)
REFSIM_PROBE(MemoryAllocator, et::MemoryAllocator)
REFSIM_PROBE(HierarchicalAllocator, et::HierarchicalAllocator)
REFSIM_PROBE(Span_uint8, et::Span<uint8_t>)
// Compile-time limit used by resolve_operator to size its temp-allocator check.
extern "C" __attribute__((used)) const unsigned char refsim_value__kTensorDimensionLimit[et::kTensorDimensionLimit] = {};
