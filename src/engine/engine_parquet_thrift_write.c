/* engine_parquet_thrift_write: the Thrift compact protocol as the Parquet
 * writer needs it: field headers with id deltas, zigzag varints, binaries,
 * lists and nested structs, booleans folded into their field header. */
#include "engine_parquet_write_int.h"

#include <stdlib.h>
#include <string.h>

void df__tw_init(struct df__tw *w, struct fr_buf *out)
{
    w->out = out;
    w->depth = 0;
    w->last[0] = 0;
}

void df__tw_varint(struct df__tw *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    fr_buf_append(w->out, b, n);
}

static uint64_t zigzag64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void df__tw_i32(struct df__tw *w, int32_t v)
{
    df__tw_varint(w, zigzag64(v));
}

void df__tw_i64(struct df__tw *w, int64_t v)
{
    df__tw_varint(w, zigzag64(v));
}

void df__tw_binary(struct df__tw *w, const void *p, size_t n)
{
    df__tw_varint(w, n);
    fr_buf_append(w->out, p, n);
}

/* The header of field `id` of `type` in the current struct: a delta from
 * the last id in the high nibble when it fits, else the id as an i16. */
static void field_header(struct df__tw *w, int16_t id, int type)
{
    int delta = id - w->last[w->depth];
    if (delta > 0 && delta <= 15) {
        fr_buf_putc(w->out, (char)(uint8_t)((delta << 4) | type));
    } else {
        fr_buf_putc(w->out, (char)(uint8_t)type);
        df__tw_i32(w, id);
    }
    w->last[w->depth] = id;
}

void df__tw_field_i32(struct df__tw *w, int16_t id, int32_t v)
{
    field_header(w, id, DF__TC_I32);
    df__tw_i32(w, v);
}

void df__tw_field_i16(struct df__tw *w, int16_t id, int16_t v)
{
    field_header(w, id, DF__TC_I16);
    df__tw_i32(w, v);
}

void df__tw_field_i64(struct df__tw *w, int16_t id, int64_t v)
{
    field_header(w, id, DF__TC_I64);
    df__tw_i64(w, v);
}

void df__tw_field_byte(struct df__tw *w, int16_t id, int8_t v)
{
    field_header(w, id, DF__TC_BYTE);
    fr_buf_putc(w->out, (char)v);
}

void df__tw_field_bool(struct df__tw *w, int16_t id, bool v)
{
    field_header(w, id, v ? DF__TC_TRUE : DF__TC_FALSE);
}

void df__tw_field_binary(struct df__tw *w, int16_t id, const void *p, size_t n)
{
    field_header(w, id, DF__TC_BINARY);
    df__tw_binary(w, p, n);
}

void df__tw_field_string(struct df__tw *w, int16_t id, const char *s)
{
    df__tw_field_binary(w, id, s, strlen(s));
}

void df__tw_field_list(struct df__tw *w, int16_t id, int elem_type, int64_t count)
{
    field_header(w, id, DF__TC_LIST);
    if (count < 15) {
        fr_buf_putc(w->out, (char)(uint8_t)((count << 4) | elem_type));
    } else {
        fr_buf_putc(w->out, (char)(uint8_t)(0xF0 | elem_type));
        df__tw_varint(w, (uint64_t)count);
    }
}

void df__tw_struct_begin(struct df__tw *w)
{
    if (w->depth + 1 >= DF__TW_MAX_DEPTH)
        abort(); /* the writer's own structs are shallow: a bug */
    w->last[++w->depth] = 0;
}

void df__tw_field_struct(struct df__tw *w, int16_t id)
{
    field_header(w, id, DF__TC_STRUCT);
    df__tw_struct_begin(w);
}

void df__tw_struct_end(struct df__tw *w)
{
    fr_buf_putc(w->out, 0);
    if (w->depth > 0)
        w->depth--;
}
