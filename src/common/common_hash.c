/* common_hash: SHA-256 content IDs (OpenSSL libcrypto) and constant-time
 * comparison for secrets. */
#include "common.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

void fr_sha256_id(const void *data, size_t len, char *out, size_t outsz)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    static const char hex[] = "0123456789abcdef";
    char tmp[8 + 64 + 1];
    memcpy(tmp, "sha256:", 7);
    for (unsigned int i = 0; i < mdlen; i++) {
        tmp[7 + 2 * i] = hex[md[i] >> 4];
        tmp[7 + 2 * i + 1] = hex[md[i] & 15];
    }
    tmp[7 + 2 * mdlen] = '\0';
    snprintf(out, outsz, "%s", tmp);
}

bool fr_consttime_eq(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t n = la > lb ? la : lb;
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < n; i++) {
        unsigned char ca = i < la ? (unsigned char)a[i] : 0;
        unsigned char cb = i < lb ? (unsigned char)b[i] : 0;
        diff |= (unsigned char)(ca ^ cb);
    }
    return diff == 0;
}
