/* sha256.h: SHA-256 (FIPS 180-4), for the catalogue's file digests and the cache key. */
#ifndef HK_SHA256_H
#define HK_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t h[8];
  uint64_t total;
  unsigned char block[64];
  size_t fill;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, unsigned char out[32]);
/* Hex digest of a buffer into out[65]. */
void sha256_hex(const void *data, size_t n, char out[65]);
void sha256_to_hex(const unsigned char d[32], char out[65]);

#endif
