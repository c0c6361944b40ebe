/*
** brisk.json.encode's walk over a table, reading Lua's own structures
** (src/sys/lua_raw.rs calls it; its Rust walk through the C API stays
** for a Lua built without brisk_lua_user.h).
**
** Why here: through the C API every key and value of a table costs a
** lua_next (which finds the key's slot again by hashing it, as
** luaH_next does), a lua_type, a lua_tolstring and a lua_settop: 48 % of
** a servlet answering JSON of 100 items went there (bench scenario 10,
** callgrind). Here a table's array part and hash nodes are read in
** place, in the order lua_next gives them (the array part, then the
** nodes), so the output is the same.
**
** This file is compiled inside the vendored Lua, as part of linit.c
** (brisk_lua_user.h includes it there), so that Lua's internal headers
** describe the structures for the very build that made them. Nothing
** here allocates Lua memory or calls Lua: the collector cannot run and
** the tables cannot change while they are read. Output goes to a buffer
** the caller owns and grows (`reserve`); strings that need escaping or
** checking and non-integral numbers are handed back to the caller.
*/
#include <math.h>
#include <string.h>

#include "lobject.h"
#include "ltable.h"

typedef struct brisk_json_out {
  unsigned char *buf;  /* buf[0..len] written, room for cap */
  size_t len, cap;
  void *ctx;  /* the caller's */
  /* Makes room for `more` bytes past len (updating buf/cap); 0 on failure. */
  int (*reserve) (struct brisk_json_out *o, size_t more);
  /* Appends a string as JSON (quoted, escaped); 0 if not UTF-8. */
  int (*string) (struct brisk_json_out *o, const char *s, size_t len);
  /* Appends a finite float as JSON; 0 on failure. */
  int (*number) (struct brisk_json_out *o, double n);
  /* plain[b]: byte b is copied into a JSON string as it is. */
  const unsigned char *plain;
  /* The null sentinel table (written as null). */
  const void *null;
  /* Tables nested deeper than this fail (or a cycle). */
  int maxdepth;
} brisk_json_out;

/* Results (src/sys/lua_raw.rs maps them to EncodeError). */
#define BJ_OK 0
#define BJ_DEPTH 1
#define BJ_NOTFINITE 2
#define BJ_NOTUTF8 3
#define BJ_KEY 4
#define BJ_VALUE 5
#define BJ_MEMORY 6

/* Object keys met in one call, by their string (short strings are
** interned, and every key stays alive during the call): where their
** JSON form ("key":) was first written in the output, to copy it from
** there when it comes again (100 objects with the same 4 keys). */
#define BJ_SLOTS 64
#define BJ_PROBE 4
typedef struct bj_keys {
  const TString *key[BJ_SLOTS];
  size_t at[BJ_SLOTS];
  unsigned int len[BJ_SLOTS];
} bj_keys;

#define bj_room(o,n) \
  ((o)->cap - (o)->len >= (size_t)(n) || (o)->reserve((o), (size_t)(n)))

static int bj_lit (brisk_json_out *o, const char *s, size_t n) {
  if (!bj_room(o, n)) return BJ_MEMORY;
  memcpy(o->buf + o->len, s, n);
  o->len += n;
  return BJ_OK;
}

static int bj_byte (brisk_json_out *o, unsigned char c) {
  if (!bj_room(o, 1)) return BJ_MEMORY;
  o->buf[o->len++] = c;
  return BJ_OK;
}

/* An integer (as Lua writes it: brisk_lua_user.h); `quoted` as an object
** key ("12":). */
static int bj_int (brisk_json_out *o, lua_Integer i, int quoted) {
  char *d;
  if (!bj_room(o, 26)) return BJ_MEMORY;  /* "-9223372036854775808": + NUL */
  d = (char *)o->buf + o->len;
  if (quoted) *d++ = '"';
  d += brisk_integer2str(d, 22, (long long)i);
  if (quoted) {
    *d++ = '"';
    *d++ = ':';
  }
  o->len = (size_t)((unsigned char *)d - o->buf);
  return BJ_OK;
}

/* A string: checked and copied in one pass when it is printable ASCII
** with nothing to escape (keys, names: most strings), else handed to
** the caller (nothing is kept of the first pass then). */
static int bj_string (brisk_json_out *o, const TString *ts) {
  const unsigned char *s = (const unsigned char *)getstr(ts);
  const unsigned char *plain = o->plain;
  size_t n = tsslen(ts), k;
  unsigned char *d;
  if (!bj_room(o, n + 2)) return BJ_MEMORY;
  d = o->buf + o->len;
  d[0] = '"';
  for (k = 0; k < n; k++) {
    unsigned char c = s[k];
    if (!plain[c])
      return o->string(o, (const char *)s, n) ? BJ_OK : BJ_NOTUTF8;
    d[k + 1] = c;
  }
  d[n + 1] = '"';
  o->len += n + 2;
  return BJ_OK;
}

/* (Short strings only, found by the hash Lua keeps of them in one of
** BJ_PROBE slots from there, the first free one taken; long strings are
** rarely keys, and are written each time.) */
static int bj_key (brisk_json_out *o, bj_keys *keys, const TString *ts) {
  size_t from = o->len, slot = BJ_SLOTS;
  unsigned int p;
  int r;
  if (ts->shrlen != 0xFF) {
    for (p = 0; p < BJ_PROBE; p++) {
      size_t s = (ts->hash + p) & (BJ_SLOTS - 1);
      if (keys->key[s] == ts) {
        unsigned int n = keys->len[s];
        if (!bj_room(o, n)) return BJ_MEMORY;
        /* (Earlier output: no overlap; buf may have moved, `at` has not.) */
        memcpy(o->buf + o->len, o->buf + keys->at[s], n);
        o->len += n;
        return BJ_OK;
      }
      if (keys->key[s] == NULL) {
        slot = s;
        break;
      }
    }
  }
  if ((r = bj_string(o, ts)) != BJ_OK || (r = bj_byte(o, ':')) != BJ_OK)
    return r;
  if (slot < BJ_SLOTS) {
    keys->key[slot] = ts;
    keys->at[slot] = from;
    keys->len[slot] = (unsigned int)(o->len - from);
  }
  return BJ_OK;
}

static int bj_table (brisk_json_out *o, bj_keys *keys, Table *t, int depth);

static int bj_value (brisk_json_out *o, bj_keys *keys, const TValue *v,
                     int depth) {
  switch (ttypetag(v)) {
    case LUA_VNIL: case LUA_VEMPTY: case LUA_VABSTKEY:
      return bj_lit(o, "null", 4);
    case LUA_VFALSE: return bj_lit(o, "false", 5);
    case LUA_VTRUE: return bj_lit(o, "true", 4);
    case LUA_VNUMINT: return bj_int(o, ivalue(v), 0);
    case LUA_VNUMFLT: {
      lua_Number n = fltvalue(v);
      if (!isfinite(n)) return BJ_NOTFINITE;
      return o->number(o, n) ? BJ_OK : BJ_MEMORY;
    }
    case LUA_VSHRSTR: case LUA_VLNGSTR: return bj_string(o, tsvalue(v));
    case LUA_VTABLE: {
      Table *t = hvalue(v);
      if ((const void *)t == o->null) return bj_lit(o, "null", 4);
      return bj_table(o, keys, t, depth + 1);
    }
    default: return BJ_VALUE;
  }
}

/* Writes one node's key as an object key. */
static int bj_nodekey (brisk_json_out *o, bj_keys *keys, const Node *n) {
  if (keyisinteger(n)) return bj_int(o, keyival(n), 1);
  if (keyisshrstr(n) || keytt(n) == ctb(LUA_VLNGSTR))
    return bj_key(o, keys, keystrval(n));
  return BJ_KEY;
}

/* A table with a border n > 0 (#t) is an array of its values 1..n; an
** empty one is []; any other is an object (as the C API walk did). */
static int bj_table (brisk_json_out *o, bj_keys *keys, Table *t, int depth) {
  unsigned int asize = luaH_realasize(t), i;
  unsigned int nsize = (unsigned int)sizenode(t), k;
  lua_Unsigned n;
  int r, first = 1;
  if (depth >= o->maxdepth) return BJ_DEPTH;
  n = luaH_getn(t);
  if (n > 0) {
    lua_Unsigned j;
    if ((r = bj_byte(o, '[')) != BJ_OK) return r;
    for (j = 1; j <= n; j++) {
      const TValue *v = j <= asize ? &t->array[j - 1]
                                   : luaH_getint(t, (lua_Integer)j);
      if (j > 1 && (r = bj_byte(o, ',')) != BJ_OK) return r;
      if ((r = bj_value(o, keys, v, depth)) != BJ_OK) return r;
    }
    return bj_byte(o, ']');
  }
  if ((r = bj_byte(o, '{')) != BJ_OK) return r;
  for (i = 0; i < asize; i++) {
    if (isempty(&t->array[i])) continue;
    if ((!first && (r = bj_byte(o, ',')) != BJ_OK)
        || (r = bj_int(o, (lua_Integer)i + 1, 1)) != BJ_OK
        || (r = bj_value(o, keys, &t->array[i], depth)) != BJ_OK)
      return r;
    first = 0;
  }
  for (k = 0; k < nsize; k++) {
    const Node *nd = gnode(t, k);
    if (isempty(gval(nd))) continue;
    if ((!first && (r = bj_byte(o, ',')) != BJ_OK)
        || (r = bj_nodekey(o, keys, nd)) != BJ_OK
        || (r = bj_value(o, keys, gval(nd), depth)) != BJ_OK)
      return r;
    first = 0;
  }
  if (first) {  /* no entry: an empty array */
    o->buf[o->len - 1] = '[';
    return bj_byte(o, ']');
  }
  return bj_byte(o, '}');
}

/* Appends the table `t` (lua_topointer of a table, not the null
** sentinel) as JSON; returns BJ_OK or what failed. Its depth is 0. */
int brisk_json_table (brisk_json_out *o, const void *t) {
  bj_keys keys;
  memset(keys.key, 0, sizeof(keys.key));
  return bj_table(o, &keys, (Table *)t, 0);
}
