/* common_error: the caller-owned error struct and status names. */
#include "common.h"

#include <stdio.h>
#include <string.h>

void fr_error_init(struct fr_error *err)
{
    memset(err, 0, sizeof(*err));
    err->position = -1;
    err->line = -1;
    err->column = -1;
    err->row_group = -1;
}

int fr_error_set(struct fr_error *err, int status, const char *fmt, ...)
{
    if (!err)
        return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    fr_utf8_cut_tail(err->message);
    return status;
}

int fr_error_vsetk(struct fr_error *err, int status, const char *kind, const char *fmt, va_list ap)
{
    if (!err)
        return status;
    err->status = status;
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    fr_utf8_cut_tail(err->message);
    snprintf(err->kind, sizeof(err->kind), "%s", kind ? kind : "");
    return status;
}

int fr_error_setk(struct fr_error *err, int status, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_error_vsetk(err, status, kind, fmt, ap);
    va_end(ap);
    return status;
}

const char *fr_status_name(int status)
{
    switch (status) {
    case FR_OK:
        return "ok";
    case FR_EINVAL:
        return "invalid";
    case FR_ENOTFOUND:
        return "not-found";
    case FR_ECONFLICT:
        return "conflict";
    case FR_EVALIDATION:
        return "validation";
    case FR_ETOOLARGE:
        return "too-large";
    case FR_ENOSPACE:
        return "insufficient-storage";
    case FR_EDATA:
        return "malformed-data";
    case FR_EUNAVAILABLE:
        return "unavailable";
    case FR_ECANCELLED:
        return "cancelled";
    case FR_EIO:
        return "io";
    case FR_EINTERNAL:
        return "internal";
    case FR_EMEMLIMIT:
        return "task-memory-limit";
    case FR_ETIMEOUT:
        return "timeout";
    }
    return "unknown";
}
