/*
 * refsim kernels_c harness: how the batch loop runs one case of one function.
 */
#ifndef RS_HARNESS_FUNCTIONS_H
#define RS_HARNESS_FUNCTIONS_H

#include <stdint.h>

#include "arm_nn_types.h"
#include "batch_format.h"

/** One parsed case: views into the loaded batch file. */
typedef struct
{
    uint32_t index;
    uint16_t function_id;
    uint8_t variant;
    uint16_t num_params;
    uint16_t num_arrays;
    const int32_t *params;
    const void *array[RS_MAX_ARRAYS];
    uint32_t count[RS_MAX_ARRAYS];
    uint8_t dtype[RS_MAX_ARRAYS];
} rs_case;

/** Where a case writes: its output and a scratch area for the kernel's ctx buffer. */
typedef struct
{
    int8_t *output;
    uint8_t *scratch;
    uint32_t scratch_bytes;
} rs_case_memory;

typedef struct
{
    uint16_t id;
    uint16_t num_params;
    uint16_t num_arrays;
    const uint8_t *dtypes; /* num_arrays entries */
    /** Checks the case's sizes; output and scratch bytes it needs. RS_CASE_OK or RS_CASE_BAD_ARGS. */
    uint16_t (*check)(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);
    /** Runs the case (kernel call between the markers); RS_CASE_OK or RS_CASE_NO_VARIANT. */
    uint16_t (*run)(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);
} rs_function;

/** The function with this id, or NULL. */
const rs_function *rs_find_function(uint16_t id);

/*
 * Markers around every kernel call, for instruction counting with a QEMU TCG plugin: the plugin
 * counts instructions executed between a call of rs_kernel_begin and the next rs_kernel_end.
 * noipa keeps them real calls with their own addresses, found by symbol name in the ELF.
 */
void rs_kernel_begin(void) __attribute__((noipa));
void rs_kernel_end(void) __attribute__((noipa));

#endif /* RS_HARNESS_FUNCTIONS_H */
