/*
 * refsim kernels_c boards: startup for every board (Cortex-M3/M4/M7/M33/M55 under QEMU).
 *
 * No newlib crt0 (rdimon's crashes under QEMU: the heap info it gets points outside RAM).
 * Reset: enable the FPU (and MVE, which shares CP10/CP11) through CPACR when the build uses
 * it, copy .data, zero .bss, trap divide-by-zero, enable the configurable faults, call main()
 * and exit through semihosting with its return value. Every exception other than reset goes
 * to one handler that prints PC, LR, xPSR, CFSR, HFSR, MMFAR, BFAR and the running case, then
 * exits with RS_EXIT_FAULT.
 */
#include <stdint.h>

#include "board.h"
#include "semihost.h"

extern uint32_t __stack_top[];
extern uint32_t __data_load[];
extern uint32_t __data_start[];
extern uint32_t __data_end[];
extern uint32_t __bss_start[];
extern uint32_t __bss_end[];

int main(void);

volatile int32_t rs_current_case = -1;
volatile uint32_t rs_current_function = 0;

/* System Control Block registers (Armv7-M / Armv8-M). */
#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08U)
#define SCB_CCR (*(volatile uint32_t *)0xE000ED14U)
#define SCB_SHCSR (*(volatile uint32_t *)0xE000ED24U)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28U)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2CU)
#define SCB_MMFAR (*(volatile uint32_t *)0xE000ED34U)
#define SCB_BFAR (*(volatile uint32_t *)0xE000ED38U)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88U)

#define CCR_DIV_0_TRP (1U << 4)
#define SHCSR_FAULTS_ENABLE ((1U << 16) | (1U << 17) | (1U << 18)) /* MemManage, BusFault, UsageFault */
#define CPACR_CP10_CP11_FULL (0xFU << 20)

void rs_reset_handler(void) __attribute__((noreturn));
void rs_fault_entry(void) __attribute__((naked));
void rs_fault_report(const uint32_t *frame, uint32_t exc_return) __attribute__((noreturn, used));

/* The 16 Armv7-M/Armv8-M system vectors; no interrupt is ever enabled, so no IRQ vectors. */
__attribute__((section(".vectors"), used)) const uintptr_t rs_vector_table[16] = {
    (uintptr_t)__stack_top,      /* 0: initial main stack pointer */
    (uintptr_t)rs_reset_handler, /* 1: reset */
    (uintptr_t)rs_fault_entry,   /* 2: NMI */
    (uintptr_t)rs_fault_entry,   /* 3: HardFault */
    (uintptr_t)rs_fault_entry,   /* 4: MemManage */
    (uintptr_t)rs_fault_entry,   /* 5: BusFault */
    (uintptr_t)rs_fault_entry,   /* 6: UsageFault */
    (uintptr_t)rs_fault_entry,   /* 7: SecureFault (Armv8-M) */
    0,
    0,
    0,
    (uintptr_t)rs_fault_entry, /* 11: SVCall */
    (uintptr_t)rs_fault_entry, /* 12: DebugMonitor */
    0,
    (uintptr_t)rs_fault_entry, /* 14: PendSV */
    (uintptr_t)rs_fault_entry, /* 15: SysTick */
};

/* Plain loops: without this attribute GCC turns them into memcpy/memset calls. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void init_memory(void)
{
    const uint32_t *src = __data_load;
    for (uint32_t *dst = __data_start; dst < __data_end; dst++)
    {
        *dst = *src++;
    }
    for (uint32_t *dst = __bss_start; dst < __bss_end; dst++)
    {
        *dst = 0;
    }
}

void rs_reset_handler(void)
{
    SCB_VTOR = (uint32_t)(uintptr_t)rs_vector_table;
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    SCB_CPACR |= CPACR_CP10_CP11_FULL;
    __asm volatile("dsb\n\tisb" ::: "memory");
#endif
    init_memory();
    SCB_CCR |= CCR_DIV_0_TRP;
    SCB_SHCSR |= SHCSR_FAULTS_ENABLE;
    __asm volatile("dsb\n\tisb" ::: "memory");
    sh_exit(main());
}

/* Pick the stack the exception frame was pushed on (EXC_RETURN bit 2) and report it. */
void rs_fault_entry(void)
{
    __asm volatile("tst lr, #4\n\t"
                   "ite eq\n\t"
                   "mrseq r0, msp\n\t"
                   "mrsne r0, psp\n\t"
                   "mov r1, lr\n\t"
                   "b rs_fault_report\n\t");
}

void rs_fault_report(const uint32_t *frame, uint32_t exc_return)
{
    uint32_t ipsr;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    /* frame: r0, r1, r2, r3, r12, lr, pc, xpsr */
    char line[320];
    char *p = sh_fmt_str(line, "refsim-fault: exception=");
    p = sh_fmt_dec(p, (int32_t)(ipsr & 0x1FFU));
    p = sh_fmt_str(p, " pc=");
    p = sh_fmt_hex(p, frame[6]);
    p = sh_fmt_str(p, " lr=");
    p = sh_fmt_hex(p, frame[5]);
    p = sh_fmt_str(p, " xpsr=");
    p = sh_fmt_hex(p, frame[7]);
    p = sh_fmt_str(p, " cfsr=");
    p = sh_fmt_hex(p, SCB_CFSR);
    p = sh_fmt_str(p, " hfsr=");
    p = sh_fmt_hex(p, SCB_HFSR);
    p = sh_fmt_str(p, " mmfar=");
    p = sh_fmt_hex(p, SCB_MMFAR);
    p = sh_fmt_str(p, " bfar=");
    p = sh_fmt_hex(p, SCB_BFAR);
    p = sh_fmt_str(p, " exc_return=");
    p = sh_fmt_hex(p, exc_return);
    p = sh_fmt_str(p, " case=");
    p = sh_fmt_dec(p, rs_current_case);
    p = sh_fmt_str(p, " function=");
    p = sh_fmt_dec(p, (int32_t)rs_current_function);
    sh_fmt_str(p, "\n");
    sh_puts(line);
    sh_exit(RS_EXIT_FAULT);
}
