/*
 * refsim dispatch probe: ExecuTorch's own runtime (Program, Method, tensor parser, memory
 * manager, kernel registry) loading and executing .pte programs on a Cortex-M core under QEMU,
 * with kernels whose bodies do nothing but mark where they run.
 *
 * Built by refsim/lab/executorch/dispatch_probe.py against an ExecuTorch source tree (never committed):
 * that script also generates kernels.cpp (one unboxing wrapper per operator, in the shape of
 * ExecuTorch's codegen, whose kernel body calls rs_probe_kernel_body()) and blobs.S (the
 * programs, embedded in the bulk region).
 *
 * Instruction counting (kernels_c/qemu_plugin) counts between rs_kernel_begin and rs_kernel_end.
 * main() opens a window before Method::execute(); every kernel body closes it and opens the
 * next; main() closes the last one after execute() returns. So a program of n KernelCalls gives
 * n + 1 windows: window 0 is execute()'s entry plus the dispatch of call 0, window k the return
 * of call k-1 and the dispatch of call k, window n the return of the last call and execute()'s
 * exit. Every program is loaded and executed once (QEMU's counts are exact and the timing model
 * has no caches, so a second run would count the same).
 *
 * Exit status: 0 all programs ran; 10 + step if one failed (1 load, 2 method, 3 input, 4 execute).
 */
#include <cstddef>
#include <cstdint>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/core/span.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

extern "C" {
#include "semihost.h"
void rs_kernel_begin(void) __attribute__((noipa));
void rs_kernel_end(void) __attribute__((noipa));
}

void rs_kernel_begin(void) { __asm volatile("" ::: "memory"); }
void rs_kernel_end(void) { __asm volatile("" ::: "memory"); }

/* blobs.S: rs_programs[rs_program_count] = {address, bytes} of each embedded .pte. */
struct ProbeProgram
{
    const uint8_t *data;
    uint32_t size;
};
extern "C" const ProbeProgram rs_programs[];
extern "C" const uint32_t rs_program_count;

/* kernels.cpp: registers the generated kernels with ExecuTorch's registry. */
void rs_probe_register_kernels();

using executorch::extension::BufferDataLoader;
using executorch::runtime::Error;
using executorch::runtime::HierarchicalAllocator;
using executorch::runtime::MemoryAllocator;
using executorch::runtime::MemoryManager;
using executorch::runtime::Method;
using executorch::runtime::Program;
using executorch::runtime::Result;
using executorch::runtime::Span;

namespace
{
/* Static pools, carved per program (reset before each). Sizes fit every bundled model. */
constexpr size_t kMethodPool = 256 * 1024;
constexpr size_t kPlannedPool = 1536 * 1024;
constexpr size_t kTempPool = 64 * 1024;
constexpr size_t kMaxPlanned = 8;
alignas(16) uint8_t method_pool[kMethodPool];
alignas(16) uint8_t planned_pool[kPlannedPool];
alignas(16) uint8_t temp_pool[kTempPool];

void fail(uint32_t program, int step, Error error)
{
    char line[96];
    char *p = sh_fmt_str(line, "dispatch-probe: program ");
    p = sh_fmt_dec(p, (int32_t)program);
    p = sh_fmt_str(p, " step ");
    p = sh_fmt_dec(p, step);
    p = sh_fmt_str(p, " error ");
    p = sh_fmt_dec(p, (int32_t)error);
    sh_fmt_str(p, "\n");
    sh_puts(line);
    sh_exit(10 + step);
}

void run_program(uint32_t index)
{
    BufferDataLoader loader(rs_programs[index].data, rs_programs[index].size);
    Result<Program> program = Program::load(&loader);
    if (!program.ok())
    {
        fail(index, 1, program.error());
    }
    MemoryAllocator method_allocator(kMethodPool, method_pool);
    MemoryAllocator temp_allocator(kTempPool, temp_pool);
    auto meta = program->method_meta("forward");
    if (!meta.ok())
    {
        fail(index, 2, meta.error());
    }
    Span<uint8_t> spans[kMaxPlanned];
    size_t planned = meta->num_memory_planned_buffers();
    size_t used = 0;
    if (planned > kMaxPlanned)
    {
        fail(index, 2, Error::MemoryAllocationFailed);
    }
    for (size_t i = 0; i < planned; ++i)
    {
        size_t size = (size_t)meta->memory_planned_buffer_size(i).get();
        if (used + size > kPlannedPool)
        {
            fail(index, 2, Error::MemoryAllocationFailed);
        }
        spans[i] = Span<uint8_t>(planned_pool + used, size);
        used += (size + 15) & ~(size_t)15;
    }
    HierarchicalAllocator planned_memory(Span<Span<uint8_t>>(spans, planned));
    MemoryManager memory(&method_allocator, &planned_memory, &temp_allocator);
    Result<Method> method = program->load_method("forward", &memory);
    if (!method.ok())
    {
        fail(index, 2, method.error());
    }
    for (size_t i = 0; i < method->inputs_size(); ++i)
    {
        /* The planned input is its own source: set_input marks it set (the copy is a no-op). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        Error set = method->set_input(method->get_input(i), i);
#pragma GCC diagnostic pop
        if (set != Error::Ok)
        {
            fail(index, 3, set);
        }
    }
    rs_kernel_begin();
    Error done = method->execute();
    rs_kernel_end();
    if (done != Error::Ok)
    {
        fail(index, 4, done);
    }
}
} // namespace

extern "C" int main(void)
{
    executorch::runtime::runtime_init();
    rs_probe_register_kernels();
    for (uint32_t i = 0; i < rs_program_count; ++i)
    {
        run_program(i);
    }
    return 0;
}
