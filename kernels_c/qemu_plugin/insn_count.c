/*
 * refsim insn_count: a QEMU TCG plugin that counts, per kernel call, how often each guest
 * instruction executed between the harness's markers rs_kernel_begin and rs_kernel_end.
 *
 *   qemu-system-arm ... -plugin insn_count.so,begin=0x1234,end=0x1240,out=counts.bin[,blocks=1]
 *
 * begin, end: the (even) addresses of the two marker functions, from the ELF symbol table;
 * out: the file to write. The plugin knows nothing about instruction classes: Python maps
 * addresses to mnemonics (arm-none-eabi-objdump) and aggregates (refsim/qemu/plugin.py).
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
 *
 * blocks=1 (refsim/qemu/timing.py) also counts translation blocks, QEMU's dynamic basic blocks
 * (a block ends at every branch; a jump into the middle of one starts a new, overlapping block).
 * A callback at the start of every block, while a call is open, bumps the block's execution
 * count, and when the block was entered other than by falling through from the block just
 * executed (its start differs from the end of that block), the new block's "entered by a jump"
 * count and the previous block's "left by a taken branch" count. The file is then version 2:
 * each call's (CALL_MARK, n) pairs are followed by (BLOCK_MARK, m) and m blocks of two pairs,
 * (start | insns << 32 | bytes << 48, executions) and (entered by a jump, left by a jump).
 *
 * data=FILE,line=N (with blocks=1): FILE holds, per call in call order, the guest address range
 * [lo, hi) of its constant arrays (weights, bias, requantization), as little-endian u64 pairs.
 * Every data read in the range while the call is open counts: after the blocks, (DATA_MARK,
 * reads), then (line switches, distinct lines): how often a read's N-byte line differed from
 * the previous such read's (a one-line buffer), and how many distinct lines were read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define FILE_MAGIC 0x544E43534E495352ULL /* "RSINSCNT" read as a little-endian u64 */
#define FILE_VERSION 1ULL
#define FILE_VERSION_BLOCKS 2ULL
#define CALL_MARK 0xFFFFFFFFFFFFFFFFULL
#define END_MARK 0xFFFFFFFFFFFFFFFEULL
#define FLAGS_MARK 0xFFFFFFFFFFFFFFFDULL
#define BLOCK_MARK 0xFFFFFFFFFFFFFFFCULL
#define DATA_MARK 0xFFFFFFFFFFFFFFFBULL

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

/* One translation block, counted only while a call is open (zeroed at rs_kernel_begin). */
typedef struct
{
    uint64_t vaddr;
    uint32_t insns;
    uint32_t bytes;
    uint64_t executions;
    uint64_t jumped_in;
    uint64_t jumped_out;
} tb_counter;

typedef struct tb_block
{
    struct tb_block *next;
    size_t used;
    tb_counter counters[BLOCK_COUNTERS];
} tb_block;

static tb_block *first_tb_block;
static tb_block *last_tb_block;
static tb_counter *previous_tb; /* the block executed last in the open call */
static int count_blocks;

/* Constant-data reads of the open call (data=FILE). */
static uint64_t *data_ranges; /* lo, hi per call */
static uint64_t data_calls;
static uint64_t line_bytes = 16;
static uint64_t data_lo, data_hi;
static uint64_t data_reads, line_switches, distinct_lines, last_line;
static uint8_t *line_seen;
static size_t line_seen_size;

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

static tb_counter *new_tb_counter(uint64_t vaddr, uint32_t insns, uint32_t bytes)
{
    if (last_tb_block == NULL || last_tb_block->used == BLOCK_COUNTERS)
    {
        tb_block *b = calloc(1, sizeof(*b));
        if (b == NULL)
        {
            qemu_plugin_outs("refsim insn_count: out of memory\n");
            abort();
        }
        if (last_tb_block == NULL)
        {
            first_tb_block = b;
        }
        else
        {
            last_tb_block->next = b;
        }
        last_tb_block = b;
    }
    tb_counter *c = &last_tb_block->counters[last_tb_block->used++];
    c->vaddr = vaddr;
    c->insns = insns;
    c->bytes = bytes;
    return c;
}

static void on_tb_exec(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    if (!in_call)
    {
        return;
    }
    tb_counter *c = userdata;
    c->executions++;
    if (previous_tb != NULL && previous_tb->vaddr + previous_tb->bytes != c->vaddr)
    {
        c->jumped_in++;
        previous_tb->jumped_out++;
    }
    previous_tb = c;
}

static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (!in_call || vaddr < data_lo || vaddr >= data_hi || qemu_plugin_mem_is_store(info))
    {
        return;
    }
    data_reads++;
    const uint64_t line = (vaddr - data_lo) / line_bytes;
    if (line != last_line)
    {
        line_switches++;
        last_line = line;
    }
    if (!line_seen[line])
    {
        line_seen[line] = 1;
        distinct_lines++;
    }
}

/** Sets the data range of call number `calls` and clears its counters. */
static void start_data_call(void)
{
    data_lo = data_hi = 0;
    data_reads = line_switches = distinct_lines = 0;
    last_line = UINT64_MAX;
    if (calls >= data_calls)
    {
        return;
    }
    data_lo = data_ranges[2 * calls];
    data_hi = data_ranges[2 * calls + 1];
    const size_t lines = (size_t)((data_hi - data_lo + line_bytes - 1) / line_bytes) + 1;
    if (lines > line_seen_size)
    {
        free(line_seen);
        line_seen = calloc(lines, 1);
        line_seen_size = line_seen == NULL ? 0 : lines;
        if (line_seen == NULL)
        {
            qemu_plugin_outs("refsim insn_count: out of memory\n");
            abort();
        }
    }
    memset(line_seen, 0, lines);
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
    for (tb_block *b = first_tb_block; b != NULL; b = b->next)
    {
        for (size_t i = 0; i < b->used; i++)
        {
            b->counters[i].executions = 0;
            b->counters[i].jumped_in = 0;
            b->counters[i].jumped_out = 0;
        }
    }
    previous_tb = NULL;
    if (data_ranges != NULL)
    {
        start_data_call();
    }
    in_call = 1;
}

/** Writes (BLOCK_MARK, m) and the m blocks that executed in the call just closed. */
static void write_blocks(void)
{
    uint64_t m = 0;
    for (tb_block *b = first_tb_block; b != NULL; b = b->next)
    {
        for (size_t i = 0; i < b->used; i++)
        {
            m += b->counters[i].executions != 0;
        }
    }
    write_pair(BLOCK_MARK, m);
    for (tb_block *b = first_tb_block; b != NULL; b = b->next)
    {
        for (size_t i = 0; i < b->used; i++)
        {
            const tb_counter *c = &b->counters[i];
            if (c->executions != 0)
            {
                write_pair(c->vaddr | (uint64_t)c->insns << 32 | (uint64_t)c->bytes << 48, c->executions);
                write_pair(c->jumped_in, c->jumped_out);
            }
        }
    }
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
    if (count_blocks)
    {
        write_blocks();
    }
    if (data_ranges != NULL)
    {
        write_pair(DATA_MARK, data_reads);
        write_pair(line_switches, distinct_lines);
    }
    calls++;
    in_call = 0;
}

/**
 * The size of a Thumb instruction from its first halfword (0b11101, 0b11110, 0b11111 in the top
 * bits: 32-bit). Not qemu_plugin_insn_size: at a page end QEMU reads the next halfword to see
 * whether the next instruction crosses the page, and those bytes are appended to the last one.
 */
static uint64_t thumb_size(const struct qemu_plugin_insn *insn)
{
    const uint8_t *data = qemu_plugin_insn_data(insn);
    const unsigned top = (unsigned)(data[1] >> 3);
    return (top == 0x1D || top == 0x1E || top == 0x1F) ? 4 : 2;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    if (count_blocks && n > 0)
    {
        const uint64_t start = qemu_plugin_tb_vaddr(tb);
        struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
        const uint64_t bytes = qemu_plugin_insn_vaddr(last) + thumb_size(last) - start;
        tb_counter *c = new_tb_counter(start, (uint32_t)n, (uint32_t)bytes);
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, c);
    }
    for (size_t i = 0; i < n; i++)
    {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        const uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
        counter *c = new_counter(vaddr);
        if (data_ranges != NULL)
        {
            /* QEMU 7.2 reports no loads to a QEMU_PLUGIN_MEM_R callback (stores only, measured):
             * register for both and drop the stores in on_mem. */
            qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
        }
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

/** Reads the data=FILE ranges; 1 on success. */
static int read_ranges(const char *name)
{
    FILE *f = fopen(name, "rb");
    if (f == NULL)
    {
        return 0;
    }
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size <= 0 || size % 16 != 0)
    {
        fclose(f);
        return 0;
    }
    data_ranges = malloc((size_t)size);
    const int ok = data_ranges != NULL && fread(data_ranges, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    data_calls = (uint64_t)size / 16;
    return ok;
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
    const char *blocks = NULL;
    const char *data = NULL;
    const char *line = NULL;
    for (int i = 0; i < argc; i++)
    {
        if (!parse_arg(argv[i], "begin", &begin) && !parse_arg(argv[i], "end", &end) &&
            !parse_arg(argv[i], "out", &path) && !parse_arg(argv[i], "blocks", &blocks) &&
            !parse_arg(argv[i], "data", &data) && !parse_arg(argv[i], "line", &line))
        {
            fprintf(stderr, "refsim insn_count: unknown argument %s (expected begin=, end=, out=, blocks=)\n",
                    argv[i]);
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
    count_blocks = blocks != NULL && strcmp(blocks, "0") != 0;
    if (line != NULL)
    {
        line_bytes = strtoull(line, NULL, 0);
    }
    if (data != NULL)
    {
        if (!count_blocks || line_bytes == 0 || !read_ranges(data))
        {
            fprintf(stderr, "refsim insn_count: data= needs blocks=1, line>0 and a readable range file %s\n", data);
            return -1;
        }
    }
    write_pair(FILE_MAGIC, count_blocks ? FILE_VERSION_BLOCKS : FILE_VERSION);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
    return 0;
}
