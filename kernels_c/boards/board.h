/*
 * refsim kernels_c boards: what the startup code offers the harness.
 *
 * One startup (startup.c) and one linker-script template (cortex_m.ld.in) serve all five
 * boards; the memory map comes from refsim/qemu/cores.py, passed as -D macros when the driver
 * preprocesses the template. The linker script defines the symbols below.
 */
#ifndef RS_BOARD_H
#define RS_BOARD_H

#include <stdint.h>

/* Process exit codes (QEMU's exit status, through SYS_EXIT_EXTENDED). */
enum
{
    RS_EXIT_OK = 0,
    RS_EXIT_USAGE = 2,     /* bad command line, or an input/output file that cannot be opened */
    RS_EXIT_FORMAT = 3,    /* the batch file is malformed */
    RS_EXIT_FAULT = 4,     /* a CPU fault; the handler printed "refsim-fault: ..." first */
    RS_EXIT_NO_SPACE = 5,  /* the batch or its results do not fit the bulk-data region */
};

/* The bulk-data region (free RAM for the batch file, results and scratch). */
extern uint8_t __bulk_start[];
extern uint8_t __bulk_end[];

/* Which case is running, for the fault report: -1 outside any case. */
extern volatile int32_t rs_current_case;
extern volatile uint32_t rs_current_function;

#endif /* RS_BOARD_H */
