/* common_time: wall and monotonic clocks, ISO 8601 formatting, RFC 3339 parsing. */
#include "common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t fr_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fr_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t fr_mono_ms(void)
{
    return fr_mono_us() / 1000;
}

void fr_cond_init_mono(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
}

void fr_mono_deadline(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    if (ms < 0)
        ms = 0;
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void fr_iso8601_ms(int64_t ms, char *out, size_t outsz)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static bool digits(const char *s, int n, int *out)
{
    *out = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *out = *out * 10 + (s[i] - '0');
    }
    return true;
}

/* RFC 3339, strictly: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM) -> ms
 * since the epoch; -1 when malformed or out of range. */
int64_t fr_rfc3339_parse_ms(const char *s)
{
    int y, mo, d, h, mi, sec, oh = 0, om = 0;
    size_t n = strlen(s);
    if (n < 20 || n > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
        !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) ||
        !digits(s + 17, 2, &sec))
        return -1;
    const char *p = s + 19;
    int64_t ms = 0;
    if (*p == '.') {
        int nd = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, nd++)
            if (nd < 3)
                ms = ms * 10 + (*p - '0');
        if (nd == 0 || nd > 9)
            return -1;
        for (; nd < 3; nd++)
            ms *= 10;
    }
    int sign = 0;
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        sign = 0;
    else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':' && digits(p + 1, 2, &oh) &&
             digits(p + 4, 2, &om) && oh <= 23 && om <= 59)
        sign = *p == '+' ? 1 : -1;
    else
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 60)
        return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec > 59 ? 59 : sec};
    int64_t t = (int64_t)timegm(&tm) - sign * (oh * 3600 + om * 60);
    return t < 0 ? -1 : t * 1000 + ms;
}
