/*
 * refsim insn_count: a QEMU TCG plugin that counts, per kernel call, how often each guest
 * instruction executed between the harness's markers rs_kernel_begin and rs_kernel_end.
 *
 *   qemu-system-arm ... -plugin insn_count.so,begin=0x1234,end=0x1240,out=counts.bin
 *
 * begin, end: the (even) addresses of the two marker functions, from the ELF symbol table;
 * out: the file to write. The plugin knows nothing about instruction classes: Python maps
 * addresses to mnemonics (arm-none-eabi-objdump) and aggregates (refsim/qemu/counting.py).
 *
 * How it counts, exactly: every translated instruction gets its own 64-bit counter, bumped by
 * an inline add that QEMU emits in front of the instruction's code (so it counts the
 * instruction whenever it starts executing, condition-failed IT instructions included, and
 * never counts what a mid-block exception skipped). A callback on the first instruction of
 * rs_kernel_begin snapshots every counter; one on the first instruction of rs_kernel_end
 * writes each counter's difference from its snapshot. Counters are never moved (allocated in
 * fixed blocks), since translated code holds their addresses; re-translating an address
 * gives it a second counter, and the reader adds counters of the same address.
 *
 * Output (little endian, pairs of u64): ("RSINSCNT", version 1); per call (CALL_MARK,
 * n) followed by n (address, count) pairs; at exit (END_MARK, calls) and (FLAGS_MARK,
 * flags): bit 0 a call was still open at exit, bit 1 a begin came while a call was open,
 * bit 2 an end came with no call open. A file without the end records was cut short.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define FILE_MAGIC 0x544E43534E495352ULL /* "RSINSCNT" read as a little-endian u64 */
#define FILE_VERSION 1ULL
#define CALL_MARK 0xFFFFFFFFFFFFFFFFULL
#define END_MARK 0xFFFFFFFFFFFFFFFEULL
#define FLAGS_MARK 0xFFFFFFFFFFFFFFFDULL

#define FLAG_OPEN_AT_EXIT 1ULL
#define FLAG_NESTED_BEGIN 2ULL
#define FLAG_STRAY_END 4ULL

typedef struct
{
    uint64_t count; /* bumped by the inline op: executions since translation */
    uint64_t base;  /* count at the last rs_kernel_begin */
    uint64_t vaddr;
} counter;

#define BLOCK_COUNTERS 4096

typedef struct block
{
    struct block *next;
    size_t used;
    counter counters[BLOCK_COUNTERS];
} block;

static block *first_block;
static block *last_block;
static uint64_t begin_addr;
static uint64_t end_addr;
static FILE *out;
static int in_call;
static uint64_t calls;
static uint64_t flags;
static uint64_t *pairs; /* scratch for one call's (address, count) pairs */
static size_t pairs_capacity;

static counter *new_counter(uint64_t vaddr)
{
    if (last_block == NULL || last_block->used == BLOCK_COUNTERS)
    {
        block *b = calloc(1, sizeof(*b));
        if (b == NULL)
        {
            qemu_plugin_outs("refsim insn_count: out of memory\n");
            abort();
        }
        if (last_block == NULL)
        {
            first_block = b;
        }
        else
        {
            last_block->next = b;
        }
        last_block = b;
    }
    counter *c = &last_block->counters[last_block->used++];
    c->vaddr = vaddr;
    return c;
}

static void write_pair(uint64_t a, uint64_t b)
{
    const uint64_t pair[2] = {a, b};
    fwrite(pair, sizeof(pair), 1, out);
}

static void on_begin(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (in_call)
    {
        flags |= FLAG_NESTED_BEGIN;
    }
    for (block *b = first_block; b != NULL; b = b->next)
    {
        for (size_t i = 0; i < b->used; i++)
        {
            b->counters[i].base = b->counters[i].count;
        }
    }
    in_call = 1;
}

static void on_end(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (!in_call)
    {
        flags |= FLAG_STRAY_END;
        return;
    }
    size_t n = 0;
    for (block *b = first_block; b != NULL; b = b->next)
    {
        for (size_t i = 0; i < b->used; i++)
        {
            const counter *c = &b->counters[i];
            if (c->count == c->base)
            {
                continue;
            }
            if (2 * (n + 1) > pairs_capacity)
            {
                pairs_capacity = pairs_capacity ? 2 * pairs_capacity : 1024;
                pairs = realloc(pairs, pairs_capacity * sizeof(*pairs));
                if (pairs == NULL)
                {
                    qemu_plugin_outs("refsim insn_count: out of memory\n");
                    abort();
                }
            }
            pairs[2 * n] = c->vaddr;
            pairs[2 * n + 1] = c->count - c->base;
            n++;
        }
    }
    write_pair(CALL_MARK, n);
    fwrite(pairs, 2 * sizeof(*pairs), n, out);
    calls++;
    in_call = 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++)
    {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        const uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
        counter *c = new_counter(vaddr);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &c->count, 1);
        if (vaddr == begin_addr)
        {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
        }
        if (vaddr == end_addr)
        {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
        }
    }
}

static void on_qemu_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    if (in_call)
    {
        flags |= FLAG_OPEN_AT_EXIT;
    }
    write_pair(END_MARK, calls);
    write_pair(FLAGS_MARK, flags);
    fclose(out);
    out = NULL;
}

/** Parses "name=value" into *value when the name matches; 1 if it did. */
static int parse_arg(const char *arg, const char *name, const char **value)
{
    const size_t len = strlen(name);
    if (strncmp(arg, name, len) == 0 && arg[len] == '=')
    {
        *value = arg + len + 1;
        return 1;
    }
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    const char *begin = NULL;
    const char *end = NULL;
    const char *path = NULL;
    for (int i = 0; i < argc; i++)
    {
        if (!parse_arg(argv[i], "begin", &begin) && !parse_arg(argv[i], "end", &end) &&
            !parse_arg(argv[i], "out", &path))
        {
            fprintf(stderr, "refsim insn_count: unknown argument %s (expected begin=, end=, out=)\n", argv[i]);
            return -1;
        }
    }
    if (begin == NULL || end == NULL || path == NULL)
    {
        fprintf(stderr, "refsim insn_count: needs begin=ADDR,end=ADDR,out=FILE\n");
        return -1;
    }
    begin_addr = strtoull(begin, NULL, 0);
    end_addr = strtoull(end, NULL, 0);
    out = fopen(path, "wb");
    if (out == NULL)
    {
        fprintf(stderr, "refsim insn_count: cannot create %s\n", path);
        return -1;
    }
    write_pair(FILE_MAGIC, FILE_VERSION);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
    return 0;
}
