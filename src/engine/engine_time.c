/* engine_time: civil-date arithmetic (days from the epoch, proleptic
 * Gregorian, H. Hinnant's algorithm) and ISO 8601 parsing and formatting. */
#include "engine.h"

#include <stdio.h>

int32_t df_ymd_to_days(int y, int m, int d)
{
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (unsigned)((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1);
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int32_t)doe - 719468;
}

void df_days_to_ymd(int32_t days, int *y, int *m, int *d)
{
    int64_t z = (int64_t)days + 719468; /* 64-bit: no overflow at the int32 extremes */
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yy + (*m <= 2));
}

static int digits(const char *s, size_t n, size_t at, int count, int *out)
{
    if (at + (size_t)count > n)
        return -1;
    int v = 0;
    for (int i = 0; i < count; i++) {
        char c = s[at + (size_t)i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dim[m - 1];
}

static int parse_ymd(const char *s, size_t n, int *y, int *m, int *d)
{
    if (n < 10 || digits(s, n, 0, 4, y) || s[4] != '-' || digits(s, n, 5, 2, m) || s[7] != '-' ||
        digits(s, n, 8, 2, d))
        return -1;
    if (*m < 1 || *m > 12 || *d < 1 || *d > days_in_month(*y, *m))
        return -1;
    return 0;
}

int df_parse_date(const char *s, size_t n, int32_t *days)
{
    int y, m, d;
    if (n != 10 || parse_ymd(s, n, &y, &m, &d))
        return -1;
    *days = df_ymd_to_days(y, m, d);
    return 0;
}

int df_parse_timestamp(const char *s, size_t n, int64_t *micros)
{
    int y, m, d, hh = 0, mi = 0, ss = 0;
    if (parse_ymd(s, n, &y, &m, &d))
        return -1;
    size_t i = 10;
    int64_t frac = 0;
    if (i < n) {
        if ((s[i] != 'T' && s[i] != ' ') || digits(s, n, i + 1, 2, &hh) || i + 3 >= n ||
            s[i + 3] != ':' || digits(s, n, i + 4, 2, &mi))
            return -1;
        i += 6;
        if (i < n && s[i] == ':') {
            if (digits(s, n, i + 1, 2, &ss))
                return -1;
            i += 3;
            if (i < n && s[i] == '.') {
                i++;
                int nd = 0;
                while (i < n && s[i] >= '0' && s[i] <= '9') {
                    if (nd < 6) {
                        frac = frac * 10 + (s[i] - '0');
                        nd++;
                    }
                    i++;
                }
                if (nd == 0)
                    return -1;
                while (nd++ < 6)
                    frac *= 10;
            }
        }
        if (hh > 23 || mi > 59 || ss > 60)
            return -1;
    }
    int64_t offset_s = 0;
    if (i < n) {
        if (s[i] == 'Z' && i + 1 == n) {
            i++;
        } else if ((s[i] == '+' || s[i] == '-') && n - i == 6 && s[i + 3] == ':') {
            int oh, om;
            if (digits(s, n, i + 1, 2, &oh) || digits(s, n, i + 4, 2, &om))
                return -1;
            offset_s = (int64_t)(oh * 3600 + om * 60) * (s[i] == '+' ? 1 : -1);
            i = n;
        } else {
            return -1;
        }
    }
    int64_t secs = (int64_t)df_ymd_to_days(y, m, d) * 86400 + hh * 3600 + mi * 60 + ss - offset_s;
    *micros = secs * 1000000 + frac;
    return 0;
}

void df_format_date(int32_t days, char *out, size_t outsz)
{
    if (days < -719162 || days > 2932896) { /* outside years 1..9999 */
        snprintf(out, outsz, "%d", (int)days);
        return;
    }
    int y, m, d;
    df_days_to_ymd(days, &y, &m, &d);
    snprintf(out, outsz, "%04d-%02d-%02d", y, m, d);
}

void df_format_timestamp(int64_t micros, char *out, size_t outsz)
{
    /* years 1..9999 only: beyond that the civil conversion would overflow */
    if (micros < -62135596800000000LL || micros > 253402300799999999LL) {
        snprintf(out, outsz, "%lld", (long long)micros);
        return;
    }
    int64_t secs = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
    int64_t frac = micros - secs * 1000000;
    int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    int64_t rem = secs - days * 86400;
    int y, m, d;
    df_days_to_ymd((int32_t)days, &y, &m, &d);
    if (frac)
        snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", y, m, d, (int)(rem / 3600),
                 (int)(rem / 60 % 60), (int)(rem % 60), (long long)frac);
    else
        snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, (int)(rem / 3600),
                 (int)(rem / 60 % 60), (int)(rem % 60));
}
