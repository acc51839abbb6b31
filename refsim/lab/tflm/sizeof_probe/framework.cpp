// The TFLM framework types MicroAllocator and MicroInterpreter::AllocateTensors place in the
// arena (tensorflow/tflite-micro @ 90b983c2). `private` is opened (after the standard headers, which
// must not see it) only so that GreedyMemoryPlanner's private BufferRequirements and ListEntry can be
// sized; access specifiers do not change a layout.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#define private public
#define protected public
#include "tensorflow/lite/micro/micro_allocator.h"
#include "tensorflow/lite/micro/recording_micro_allocator.h"
#include "tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.h"
#include "tensorflow/lite/micro/arena_allocator/recording_single_arena_buffer_allocator.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tensorflow/lite/micro/memory_planner/linear_memory_planner.h"
#include "tensorflow/lite/micro/micro_allocation_info.h"
#include "tensorflow/lite/micro/tflite_bridge/flatbuffer_conversions_bridge.h"
#include "tensorflow/lite/c/common.h"
#include "tensorflow/lite/micro/micro_arena_constants.h"
#undef private
#undef protected

#include "probe.h"

namespace refsim_probe {
// micro_allocator.cc, anonymous namespace: class MicroBuiltinDataAllocator : public
// TfLiteBridgeBuiltinDataAllocator { IPersistentBufferAllocator* persistent_allocator_; } with
// two virtual overrides; the same members here, so the compiler lays it out alike.
class MicroBuiltinDataAllocator : public tflite::TfLiteBridgeBuiltinDataAllocator {
 public:
  void* Allocate(size_t, size_t) override { return nullptr; }
  void Deallocate(void*) override {}
  tflite::IPersistentBufferAllocator* persistent_allocator_;
};
}  // namespace refsim_probe

REFSIM_PROBE(SingleArenaBufferAllocator, tflite::SingleArenaBufferAllocator)
REFSIM_PROBE(RecordingSingleArenaBufferAllocator, tflite::RecordingSingleArenaBufferAllocator)
REFSIM_PROBE(GreedyMemoryPlanner, tflite::GreedyMemoryPlanner)
REFSIM_PROBE(LinearMemoryPlanner, tflite::LinearMemoryPlanner)
REFSIM_PROBE(MicroAllocator, tflite::MicroAllocator)
REFSIM_PROBE(RecordingMicroAllocator, tflite::RecordingMicroAllocator)
REFSIM_PROBE(MicroBuiltinDataAllocator, refsim_probe::MicroBuiltinDataAllocator)
REFSIM_PROBE(SubgraphAllocations, tflite::SubgraphAllocations)
REFSIM_PROBE(TfLiteEvalTensor, TfLiteEvalTensor)
REFSIM_PROBE(NodeAndRegistration, tflite::NodeAndRegistration)
REFSIM_PROBE(ScratchBufferRequest, tflite::internal::ScratchBufferRequest)
REFSIM_PROBE(ScratchBufferHandle, tflite::ScratchBufferHandle)
REFSIM_PROBE(AllocationInfo, tflite::AllocationInfo)
REFSIM_PROBE(size_t, size_t)
REFSIM_PROBE(TfLiteTensor, TfLiteTensor)
REFSIM_PROBE(TfLiteTensor_ptr, TfLiteTensor*)
REFSIM_PROBE(TfLiteAffineQuantization, TfLiteAffineQuantization)
REFSIM_PROBE(TfLiteIntArray, TfLiteIntArray)
REFSIM_PROBE(TfLiteIntArray_elem, decltype(TfLiteIntArray::data[0]))
REFSIM_PROBE(GreedyMemoryPlanner_BufferRequirements, tflite::GreedyMemoryPlanner::BufferRequirements)
REFSIM_PROBE(GreedyMemoryPlanner_ListEntry, tflite::GreedyMemoryPlanner::ListEntry)
REFSIM_PROBE(int, int)
REFSIM_VALUE(MicroArenaBufferAlignment, tflite::MicroArenaBufferAlignment())
