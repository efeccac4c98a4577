/* hkrt_json.h: libhkrt's small, strict JSON reader (json.c), for manifests.
   RFC 8259 only: no comments, no trailing commas, no duplicate keys, no NUL
   in strings, valid UTF-8; nesting and size are bounded. The whole document
   lives in one arena, freed by hkrt_json_free. */
#ifndef HKRT_JSON_H
#define HKRT_JSON_H

#include <stddef.h>

#include "hkrt_int.h"

#define HKRT_JSON_MAX_DEPTH 32
#define HKRT_JSON_MAX_MEMBERS 1024 /* per object: keeps duplicate-key checks cheap */
#define HKRT_JSON_MAX_BYTES (512u << 20) /* a 100000-kernel catalogue is ~250 MiB */

typedef enum {
  HKRT_JSON_NULL,
  HKRT_JSON_BOOL,
  HKRT_JSON_NUMBER,
  HKRT_JSON_STRING,
  HKRT_JSON_ARRAY,
  HKRT_JSON_OBJECT
} hkrt_json_type;

typedef struct hkrt_json hkrt_json;
struct hkrt_json {
  hkrt_json_type type;
  int line, col;       /* where the value starts, 1-based */
  const char *key;     /* a member of an object: its key */
  const char *str;     /* STRING: decoded text; NUMBER: the literal */
  long long num;       /* NUMBER: the value when is_int */
  int is_int;          /* NUMBER without fraction or exponent, in range */
  int boolean;         /* BOOL */
  hkrt_json *child;    /* ARRAY, OBJECT: first element or member */
  hkrt_json *next;     /* the next element or member of the parent */
  size_t count;        /* ARRAY, OBJECT: number of children */
};

typedef struct hkrt_json_doc hkrt_json_doc;

/* Parses text[0..len). On failure returns NULL and writes
   "LINE:COL: what is wrong" into err. */
HKRT_LOCAL hkrt_json_doc *hkrt_json_parse(const char *text, size_t len, char *err, size_t errlen);
/* Reads and parses a file; errors name it ("PATH:LINE:COL: ..."). */
HKRT_LOCAL hkrt_status hkrt_json_read_file(const char *path, hkrt_json_doc **out);
HKRT_LOCAL const hkrt_json *hkrt_json_root(const hkrt_json_doc *doc);
HKRT_LOCAL void hkrt_json_free(hkrt_json_doc *doc);
/* The member KEY of an object, or NULL. */
HKRT_LOCAL const hkrt_json *hkrt_json_get(const hkrt_json *obj, const char *key);
HKRT_LOCAL const char *hkrt_json_type_name(hkrt_json_type t);

#endif
