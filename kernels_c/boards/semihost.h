/*
 * refsim kernels_c boards: Arm semihosting (BKPT 0xAB on M-profile), the calls the harness uses.
 *
 * QEMU answers them itself with `-semihosting-config enable=on,target=native`; paths are
 * relative to QEMU's working directory. Console output (SYS_WRITE0) goes to QEMU's stderr.
 */
#ifndef RS_SEMIHOST_H
#define RS_SEMIHOST_H

#include <stdint.h>

enum
{
    SYS_OPEN = 0x01,
    SYS_CLOSE = 0x02,
    SYS_WRITE0 = 0x04,
    SYS_WRITE = 0x05,
    SYS_READ = 0x06,
    SYS_FLEN = 0x0C,
    SYS_GET_CMDLINE = 0x15,
    SYS_EXIT_EXTENDED = 0x20,
};

/* SYS_OPEN modes (ISO C fopen mode index). */
enum
{
    SH_MODE_RB = 1,
    SH_MODE_WB = 5,
};

/** Issue one semihosting call; returns r0. */
int32_t sh_call(int32_t op, void *arg);

/** SYS_OPEN: handle, or -1. */
int32_t sh_open(const char *path, int32_t mode);
/** SYS_CLOSE: 0 on success. */
int32_t sh_close(int32_t handle);
/** SYS_FLEN: file length, or -1. */
int32_t sh_flen(int32_t handle);
/** SYS_READ: bytes NOT read (0 = all read). */
int32_t sh_read(int32_t handle, void *buf, uint32_t len);
/** SYS_WRITE: bytes NOT written (0 = all written). */
int32_t sh_write(int32_t handle, const void *buf, uint32_t len);
/** SYS_GET_CMDLINE into buf (NUL-terminated): 0 on success. */
int32_t sh_get_cmdline(char *buf, uint32_t len);
/** SYS_WRITE0: a NUL-terminated string to the host console (QEMU's stderr). */
void sh_puts(const char *s);
/** SYS_EXIT_EXTENDED (ADP_Stopped_ApplicationExit, code): QEMU exits with `code`. */
__attribute__((noreturn)) void sh_exit(int32_t code);

/** Append "0x%08x" of v to dst (11 bytes incl. NUL); returns the end (at the NUL). */
char *sh_fmt_hex(char *dst, uint32_t v);
/** Append the decimal of v to dst; returns the end (at the NUL). */
char *sh_fmt_dec(char *dst, int32_t v);
/** Append the string s to dst; returns the end (at the NUL). */
char *sh_fmt_str(char *dst, const char *s);

#endif /* RS_SEMIHOST_H */
