/* common_buf: a growable byte buffer that stays NUL-terminated. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fr_buf_init(struct fr_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void fr_buf_cleanup(struct fr_buf *b)
{
    free(b->data);
    fr_buf_init(b);
}

static void reserve(struct fr_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = fr_xrealloc(b->data, cap);
    b->cap = cap;
}

void fr_buf_append(struct fr_buf *b, const void *data, size_t n)
{
    reserve(b, n);
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void fr_buf_puts(struct fr_buf *b, const char *s)
{
    fr_buf_append(b, s, strlen(s));
}

void fr_buf_putc(struct fr_buf *b, char c)
{
    fr_buf_append(b, &c, 1);
}

void fr_buf_printf(struct fr_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *fr_buf_steal(struct fr_buf *b, size_t *len)
{
    if (!b->data)
        fr_buf_append(b, "", 0);
    char *p = b->data;
    if (len)
        *len = b->len;
    fr_buf_init(b);
    return p;
}
