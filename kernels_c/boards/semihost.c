/*
 * refsim kernels_c boards: semihosting calls (see semihost.h). No newlib I/O, no rdimon.
 */
#include "semihost.h"

#include <string.h>

int32_t sh_call(int32_t op, void *arg)
{
    register int32_t r0 __asm("r0") = op;
    register void *r1 __asm("r1") = arg;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int32_t sh_open(const char *path, int32_t mode)
{
    uint32_t block[3] = {(uint32_t)(uintptr_t)path, (uint32_t)mode, (uint32_t)strlen(path)};
    return sh_call(SYS_OPEN, block);
}

int32_t sh_close(int32_t handle)
{
    uint32_t block[1] = {(uint32_t)handle};
    return sh_call(SYS_CLOSE, block);
}

int32_t sh_flen(int32_t handle)
{
    uint32_t block[1] = {(uint32_t)handle};
    return sh_call(SYS_FLEN, block);
}

int32_t sh_read(int32_t handle, void *buf, uint32_t len)
{
    uint32_t block[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)buf, len};
    return sh_call(SYS_READ, block);
}

int32_t sh_write(int32_t handle, const void *buf, uint32_t len)
{
    uint32_t block[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)buf, len};
    return sh_call(SYS_WRITE, block);
}

int32_t sh_get_cmdline(char *buf, uint32_t len)
{
    uint32_t block[2] = {(uint32_t)(uintptr_t)buf, len};
    const int32_t status = sh_call(SYS_GET_CMDLINE, block);
    buf[len - 1] = '\0';
    return status;
}

void sh_puts(const char *s) { sh_call(SYS_WRITE0, (void *)(uintptr_t)s); }

void sh_exit(int32_t code)
{
    uint32_t block[2] = {0x20026U /* ADP_Stopped_ApplicationExit */, (uint32_t)code};
    sh_call(SYS_EXIT_EXTENDED, block);
    for (;;)
    {
        /* not reached: QEMU has exited */
    }
}

char *sh_fmt_hex(char *dst, uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    *dst++ = '0';
    *dst++ = 'x';
    for (int shift = 28; shift >= 0; shift -= 4)
    {
        *dst++ = digits[(v >> shift) & 0xFU];
    }
    *dst = '\0';
    return dst;
}

char *sh_fmt_dec(char *dst, int32_t v)
{
    char tmp[12];
    int n = 0;
    uint32_t u = v < 0 ? 0U - (uint32_t)v : (uint32_t)v;
    do
    {
        tmp[n++] = (char)('0' + (u % 10U));
        u /= 10U;
    } while (u != 0U);
    if (v < 0)
    {
        *dst++ = '-';
    }
    while (n > 0)
    {
        *dst++ = tmp[--n];
    }
    *dst = '\0';
    return dst;
}

char *sh_fmt_str(char *dst, const char *s)
{
    while (*s != '\0')
    {
        *dst++ = *s++;
    }
    *dst = '\0';
    return dst;
}
