/*
 * refsim kernels_c harness: run a batch of kernel cases from one file, write all results to another.
 *
 * Command line (QEMU -append): "<input batch file> <output result file>" (the last two words of
 * the semihosting command line, whose first word is the ELF path). The batch format is in
 * batch_format.h. Memory: the whole input file is read with one SYS_READ to the start of the
 * bulk-data region; result records follow it; per-case kernel scratch is carved from the end of
 * the region. All results are written with one SYS_WRITE at the end.
 *
 * Per case, a 16-byte guard after the output is checked after the kernel returns, and the output
 * is pre-filled with a pattern, so an out-of-bounds or missing write is reported, not hidden.
 */
#include <stddef.h>
#include <string.h>

#include "board.h"
#include "functions.h"
#include "semihost.h"

#define GUARD_BYTES 16U
#define GUARD_VALUE 0xA5U
#define OUTPUT_FILL 0x5AU

static uint32_t align4(uint32_t n) { return (n + 3U) & ~3U; }

static int fail(int code, const char *what, const char *detail)
{
    char line[256];
    char *p = sh_fmt_str(line, "refsim-harness: error: ");
    p = sh_fmt_str(p, what);
    p = sh_fmt_str(p, detail);
    sh_fmt_str(p, "\n");
    sh_puts(line);
    return code;
}

/** The last two space-separated words of the command line: input and output paths. */
static int parse_cmdline(char *cmdline, const char **in_path, const char **out_path)
{
    const char *words[2] = {NULL, NULL};
    char *p = cmdline;
    while (*p != '\0')
    {
        while (*p == ' ')
        {
            *p++ = '\0';
        }
        if (*p == '\0')
        {
            break;
        }
        words[0] = words[1];
        words[1] = p;
        while (*p != '\0' && *p != ' ')
        {
            p++;
        }
    }
    *in_path = words[0];
    *out_path = words[1];
    return words[0] != NULL && words[1] != NULL;
}

/** Parse one case record at `at` (bounds already checked against `end`). 0 if malformed. */
static int parse_case(const uint8_t *at, const uint8_t *end, rs_case *c)
{
    const rs_case_header *h = (const rs_case_header *)at;
    if (h->num_arrays > RS_MAX_ARRAYS || h->variant > RS_VARIANT_MVE)
    {
        return 0;
    }
    c->function_id = h->function_id;
    c->variant = h->variant;
    c->num_params = h->num_params;
    c->num_arrays = h->num_arrays;
    const uint8_t *p = at + sizeof(*h);
    if ((uint32_t)(end - p) / 4U < h->num_params)
    {
        return 0;
    }
    c->params = (const int32_t *)p;
    p += 4U * h->num_params;
    for (uint32_t i = 0; i < h->num_arrays; i++)
    {
        if (p + sizeof(rs_array_header) > end)
        {
            return 0;
        }
        const rs_array_header *a = (const rs_array_header *)p;
        const uint32_t elem = a->dtype == RS_DTYPE_INT32 ? 4U : 1U;
        p += sizeof(*a);
        if (a->count > (uint32_t)(end - p) / elem)
        {
            return 0;
        }
        c->dtype[i] = a->dtype;
        c->count[i] = a->count;
        c->array[i] = p;
        p += align4(a->count * elem);
    }
    return p <= end;
}

/** Checks a case against its function; harness status. */
static uint16_t check_case(const rs_function *fn, const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    if (c->num_params != fn->num_params || c->num_arrays != fn->num_arrays)
    {
        return RS_CASE_BAD_ARGS;
    }
    for (uint32_t i = 0; i < c->num_arrays; i++)
    {
        if (c->dtype[i] != fn->dtypes[i])
        {
            return RS_CASE_BAD_ARGS;
        }
    }
    return fn->check(c, output_bytes, scratch_bytes);
}

/** Runs one case, writing its result record at `out`; returns the record's size. */
static uint32_t run_case(const rs_case *c, uint8_t *out, uint8_t *limit)
{
    rs_result_header *r = (rs_result_header *)out;
    int8_t *output = (int8_t *)(out + sizeof(*r));
    uint32_t output_bytes = 0;
    uint32_t scratch_bytes = 0;
    int32_t kernel_status = 0;
    uint16_t status = RS_CASE_UNKNOWN_FUNCTION;

    const rs_function *fn = rs_find_function(c->function_id);
    if (fn != NULL)
    {
        status = RS_PUBLIC_API_ONLY && c->variant != RS_VARIANT_DEFAULT
                     ? RS_CASE_NO_VARIANT
                     : check_case(fn, c, &output_bytes, &scratch_bytes);
    }
    if (status == RS_CASE_OK)
    {
        uint8_t *scratch = (uint8_t *)((uintptr_t)(limit - scratch_bytes) & ~(uintptr_t)15U);
        if ((uint8_t *)output + output_bytes + GUARD_BYTES > scratch)
        {
            status = RS_CASE_NO_SPACE;
            output_bytes = 0;
        }
        else
        {
            memset(output, OUTPUT_FILL, output_bytes);
            memset((uint8_t *)output + output_bytes, GUARD_VALUE, GUARD_BYTES);
            const rs_case_memory mem = {output, scratch, scratch_bytes};
            rs_current_case = (int32_t)c->index;
            rs_current_function = c->function_id;
            status = fn->run(c, &mem, &kernel_status);
            rs_current_case = -1;
            for (uint32_t i = 0; i < GUARD_BYTES; i++)
            {
                if (((uint8_t *)output)[output_bytes + i] != GUARD_VALUE)
                {
                    status = RS_CASE_GUARD_OVERWRITTEN;
                }
            }
        }
    }
    if (status != RS_CASE_OK && status != RS_CASE_GUARD_OVERWRITTEN)
    {
        output_bytes = 0;
    }
    memset((uint8_t *)output + output_bytes, 0, align4(output_bytes) - output_bytes);
    r->record_bytes = (uint32_t)sizeof(*r) + align4(output_bytes);
    r->function_id = c->function_id;
    r->harness_status = status;
    r->kernel_status = kernel_status;
    r->output_bytes = output_bytes;
    return r->record_bytes;
}

int main(void)
{
    static char cmdline[512];
    const char *in_path;
    const char *out_path;
    if (sh_get_cmdline(cmdline, sizeof(cmdline)) != 0 || !parse_cmdline(cmdline, &in_path, &out_path))
    {
        return fail(RS_EXIT_USAGE, "usage: harness <batch file> <result file>", "");
    }

    uint8_t *const bulk = __bulk_start;
    uint8_t *const bulk_end = __bulk_end;
    const int32_t in = sh_open(in_path, SH_MODE_RB);
    if (in < 0)
    {
        return fail(RS_EXIT_USAGE, "cannot open ", in_path);
    }
    const int32_t in_bytes = sh_flen(in);
    if (in_bytes < (int32_t)sizeof(rs_batch_header) || (uint32_t)in_bytes > (uint32_t)(bulk_end - bulk) / 2U)
    {
        return fail(RS_EXIT_NO_SPACE, "batch file too small or larger than half the bulk region: ", in_path);
    }
    if (sh_read(in, bulk, (uint32_t)in_bytes) != 0)
    {
        return fail(RS_EXIT_USAGE, "short read of ", in_path);
    }
    sh_close(in);

    const rs_batch_header *header = (const rs_batch_header *)bulk;
    if (header->magic != RS_BATCH_MAGIC || header->version != RS_BATCH_VERSION ||
        header->total_bytes != (uint32_t)in_bytes)
    {
        return fail(RS_EXIT_FORMAT, "bad batch header (magic, version or size) in ", in_path);
    }

    const uint8_t *const in_end = bulk + in_bytes;
    uint8_t *const results = bulk + (((uint32_t)in_bytes + 15U) & ~15U);
    uint8_t *out = results + sizeof(rs_batch_header);
    const uint8_t *at = bulk + sizeof(rs_batch_header);
    for (uint32_t i = 0; i < header->num_cases; i++)
    {
        const rs_case_header *h = (const rs_case_header *)at;
        if (at + sizeof(*h) > in_end || h->case_bytes < sizeof(*h) || (h->case_bytes & 3U) != 0 ||
            h->case_bytes > (uint32_t)(in_end - at))
        {
            return fail(RS_EXIT_FORMAT, "case record overruns the batch file ", in_path);
        }
        rs_case c;
        c.index = i;
        if (!parse_case(at, at + h->case_bytes, &c))
        {
            return fail(RS_EXIT_FORMAT, "malformed case record in ", in_path);
        }
        if (out + sizeof(rs_result_header) + GUARD_BYTES > bulk_end)
        {
            return fail(RS_EXIT_NO_SPACE, "results do not fit the bulk region", "");
        }
        out += run_case(&c, out, bulk_end);
        at += h->case_bytes;
    }

    rs_batch_header *result_header = (rs_batch_header *)results;
    result_header->magic = RS_RESULT_MAGIC;
    result_header->version = RS_BATCH_VERSION;
    result_header->num_cases = header->num_cases;
    result_header->total_bytes = (uint32_t)(out - results);

    const int32_t fd = sh_open(out_path, SH_MODE_WB);
    if (fd < 0)
    {
        return fail(RS_EXIT_USAGE, "cannot create ", out_path);
    }
    if (sh_write(fd, results, result_header->total_bytes) != 0)
    {
        return fail(RS_EXIT_USAGE, "short write of ", out_path);
    }
    sh_close(fd);
    return RS_EXIT_OK;
}
