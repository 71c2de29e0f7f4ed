/* common_log: one line per event on stderr, written with a single write(2)
 * so lines from many threads never interleave. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int fr_log_threshold = FR_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int fr_log_level_parse(const char *s, int *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return FR_EINVAL;
}

static void write_line(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

void fr_log_write(int level, const char *fmt, ...)
{
    char ts[40];
    fr_iso8601_ms(fr_now_ms(), ts, sizeof(ts));
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", ts,
                  level_names[level < 0   ? 0
                              : level > 3 ? 3
                                          : level]);
    for (const char *p = msg; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            fr_buf_printf(&b, "\\%c", c);
        else if (c < 0x20)
            fr_buf_printf(&b, "\\u%04x", c);
        else
            fr_buf_putc(&b, (char)c);
    }
    fr_buf_puts(&b, "\"}\n");
    write_line(b.data, b.len);
    fr_buf_cleanup(&b);
}

void fr_log_json_line(const char *json)
{
    size_t n = strlen(json);
    char *line = fr_xmalloc(n + 2);
    memcpy(line, json, n);
    line[n] = '\n';
    write_line(line, n + 1);
    free(line);
}
