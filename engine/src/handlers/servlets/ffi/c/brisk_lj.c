/*
** brisk.json.encode's walk over a table, inside LuaJIT (2.1, GC64 or
** not): it reads LuaJIT's own GCtab/Node/GCstr rather than going through
** the C API (lua_next finds each key's slot again; a JSON request of 100
** items went from 459 K to 272 K instructions).
** engine/src/handlers/servlets/ffi/raw.rs calls it as `brisk_json_table` when engine/build.rs finds it in the library
** (cfg brisk_lj_walk), and keeps its C API walk as the fallback, which
** writes the same text (unit tests compare the two).
**
** How it is built: LuaJIT's own Makefile compiles it, as one more object
** of libluajit.a, with the very flags (GC64, LUAJIT_DISABLE_*, CCOPT) that
** made the structures it reads. luajit-src runs `make -e` in a copy of
** LuaJIT's source, so the environment (.cargo/config.toml's [env]) sets:
**   LJCORE_O = "ljamalg.o brisk_lj.o"  (the amalgamated core, and this)
**   VPATH = engine/src/handlers/servlets/ffi/c  (where make finds this)
**   TARGET_FLAGS = "-I."                (LuaJIT's headers, from the copy)
** Nothing else reads those three (the cc crate reads none of them).
** Cargo does not rebuild LuaJIT when this file changes: delete
** target/PROFILE/build/mlua-sys-HASH and its .fingerprint twin (the
** build warns with their names).
**
** Order and output are lua_next's (lj_tab_next): the array part from
** slot 0 (key 0, which LuaJIT keeps in the array part) to asize-1, then
** the hash nodes 0..hmask. Numbers are doubles: one that is integral and
** within the 64-bit integers (not -0.0) is written as an integer (id = 1
** -> 1), as the C API walk does through mlua's lua_isinteger; a key the
** same way ("1":); any other number key fails (BJ_KEY).
**
** Nothing here allocates or calls into the VM (the collector cannot run,
** the table cannot change). lj_tab_len and lj_tab_getinth are LJ_FUNCA:
** extern (hidden) even in the amalgamated build, as the VM calls them.
*/
#define LUA_CORE
/* LuaJIT's own assertions (debug builds, whose LuaJIT mlua-sys builds
** with LUA_USE_ASSERT) call lj_assert_fail, which the amalgamated core
** keeps to itself: off here. They change no structure's layout. */
#undef LUA_USE_ASSERT
#undef LUA_USE_APICHECK
#include <math.h>
#include <string.h>

#include "lj_obj.h"
#include "lj_tab.h"

typedef struct brisk_json_out {
  unsigned char *buf;  /* buf[0..len] written, room for cap */
  size_t len, cap;
  void *ctx;  /* the caller's */
  int (*reserve) (struct brisk_json_out *o, size_t more);
  int (*string) (struct brisk_json_out *o, const char *s, size_t len);
  int (*number) (struct brisk_json_out *o, double n);
  const unsigned char *plain;
  const void *null;
  int maxdepth;
  /* Whether the request's CPU budget is spent (asked every BJ_EVERY
  ** slots: a table that once had a million slots keeps them, empty, and
  ** one referenced 20,000 times was 20 billion slots, 30 s of C). */
  int (*spent) (struct brisk_json_out *o);
  size_t steps;
} brisk_json_out;

#define BJ_OK 0
#define BJ_DEPTH 1
#define BJ_NOTFINITE 2
#define BJ_NOTUTF8 3
#define BJ_KEY 4
#define BJ_VALUE 5
#define BJ_MEMORY 6
#define BJ_STOPPED 7

/* One slot read (empty or not); every BJ_EVERY, the budget is asked. */
#define BJ_EVERY 4096
#define bj_step(o) \
  ((++(o)->steps & (BJ_EVERY - 1)) == 0 && (o)->spent(o))

/* Object keys met in one call (every LuaJIT string is interned: the same
** key is the same GCstr), where their "key": was first written. */
#define BJ_SLOTS 64
#define BJ_PROBE 4
typedef struct bj_keys {
  const GCstr *key[BJ_SLOTS];
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

/* An integer in decimal; `quoted` as an object key ("12":). */
static int bj_int (brisk_json_out *o, int64_t i, int quoted) {
  char digits[24], *p = digits + sizeof(digits), *d;
  uint64_t u = i < 0 ? 0ull - (uint64_t)i : (uint64_t)i;
  size_t n;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (i < 0) *--p = '-';
  n = (size_t)(digits + sizeof(digits) - p);
  if (!bj_room(o, n + 3)) return BJ_MEMORY;
  d = (char *)o->buf + o->len;
  if (quoted) *d++ = '"';
  memcpy(d, p, n);
  d += n;
  if (quoted) {
    *d++ = '"';
    *d++ = ':';
  }
  o->len = (size_t)((unsigned char *)d - o->buf);
  return BJ_OK;
}

/* Whether the double n is written as the integer *i (mlua's
** lua_isinteger under LuaJIT: integral, in i64's range, not -0.0). */
static int bj_integral (double n, int64_t *i) {
  if (!(n >= -9223372036854775808.0 && n < 9223372036854775808.0))
    return 0;  /* (NaN too) */
  *i = (int64_t)n;
  return (double)*i == n && !(n == 0 && signbit(n));
}

static int bj_string (brisk_json_out *o, const GCstr *s) {
  const unsigned char *p = (const unsigned char *)strdata(s);
  const unsigned char *plain = o->plain;
  size_t n = s->len, k;
  unsigned char *d;
  if (!bj_room(o, n + 2)) return BJ_MEMORY;
  d = o->buf + o->len;
  d[0] = '"';
  for (k = 0; k < n; k++) {
    unsigned char c = p[k];
    if (!plain[c])
      return o->string(o, (const char *)p, n) ? BJ_OK : BJ_NOTUTF8;
    d[k + 1] = c;
  }
  d[n + 1] = '"';
  o->len += n + 2;
  return BJ_OK;
}

static int bj_key (brisk_json_out *o, bj_keys *keys, const GCstr *s) {
  size_t from = o->len, slot = BJ_SLOTS;
  unsigned int p;
  int r;
  for (p = 0; p < BJ_PROBE; p++) {
    size_t i = (s->hash + p) & (BJ_SLOTS - 1);
    if (keys->key[i] == s) {
      unsigned int n = keys->len[i];
      if (!bj_room(o, n)) return BJ_MEMORY;
      memcpy(o->buf + o->len, o->buf + keys->at[i], n);
      o->len += n;
      return BJ_OK;
    }
    if (keys->key[i] == NULL) {
      slot = i;
      break;
    }
  }
  if ((r = bj_string(o, s)) != BJ_OK || (r = bj_byte(o, ':')) != BJ_OK)
    return r;
  if (slot < BJ_SLOTS) {
    keys->key[slot] = s;
    keys->at[slot] = from;
    keys->len[slot] = (unsigned int)(o->len - from);
  }
  return BJ_OK;
}

static int bj_table (brisk_json_out *o, bj_keys *keys, GCtab *t, int depth);

static int bj_value (brisk_json_out *o, bj_keys *keys, cTValue *v,
                     int depth) {
  if (v == NULL || tvisnil(v)) return bj_lit(o, "null", 4);
  if (tvisfalse(v)) return bj_lit(o, "false", 5);
  if (tvistrue(v)) return bj_lit(o, "true", 4);
  if (tvisint(v)) return bj_int(o, intV(v), 0);
  if (tvisnum(v)) {
    double n = numV(v);
    int64_t i;
    if (bj_integral(n, &i)) return bj_int(o, i, 0);
    if (!isfinite(n)) return BJ_NOTFINITE;
    return o->number(o, n) ? BJ_OK : BJ_MEMORY;
  }
  if (tvisstr(v)) return bj_string(o, strV(v));
  if (tvistab(v)) return bj_table(o, keys, tabV(v), depth + 1);
  /* brisk.json.null: a userdata (its block, as lua_topointer gives it) */
  if (tvisudata(v) && (const void *)uddata(udataV(v)) == o->null)
    return bj_lit(o, "null", 4);
  return BJ_VALUE;
}

static int bj_nodekey (brisk_json_out *o, bj_keys *keys, cTValue *k) {
  int64_t i;
  if (tvisstr(k)) return bj_key(o, keys, strV(k));
  if (tvisint(k)) return bj_int(o, intV(k), 1);
  if (tvisnum(k) && bj_integral(numV(k), &i)) return bj_int(o, i, 1);
  return BJ_KEY;
}

/* A table whose keys are all integers from 1 (count of them) up to at
** most twice as many (max) is an array of its values 1..max, a hole
** written null ({1, 2, nil, 4} -> [1,2,null,4]); an empty one is []; any
** other is an object of all its entries (as the C API walk). Only the
** border (#t) was asked: what lay past it, or beside it under other
** keys, was dropped ({1, 2, x = 5} -> [1,2]). */
static int bj_table (brisk_json_out *o, bj_keys *keys, GCtab *t, int depth) {
  uint32_t asize = t->asize, hmask = t->hmask, i;
  TValue *array = tvref(t->array);
  Node *node = noderef(t->node);
  uint64_t count = 0, max = 0;
  int r, first = 1, ints = 1;
  if (depth >= o->maxdepth) return BJ_DEPTH;
  if (asize > 0 && !tvisnil(&array[0])) ints = 0;  /* key 0 */
  for (i = 1; ints && i < asize; i++) {
    if (bj_step(o)) return BJ_STOPPED;
    if (tvisnil(&array[i])) continue;
    count++;
    max = i;
  }
  for (i = 0; ints && i <= hmask; i++) {
    const Node *nd = &node[i];
    int64_t k;
    if (bj_step(o)) return BJ_STOPPED;
    if (tvisnil(&nd->val)) continue;
    if (tvisint(&nd->key)) k = intV(&nd->key);
    else if (!tvisnum(&nd->key) || !bj_integral(numV(&nd->key), &k)) k = 0;
    if (k < 1) { ints = 0; break; }
    count++;
    if ((uint64_t)k > max) max = (uint64_t)k;
  }
  if (ints && count > 0 && max <= 2 * count) {
    uint64_t j;
    if ((r = bj_byte(o, '[')) != BJ_OK) return r;
    for (j = 1; j <= max; j++) {
      cTValue *v = j < asize ? &array[j] : lj_tab_getinth(t, (int32_t)j);
      if (bj_step(o)) return BJ_STOPPED;
      if (j > 1 && (r = bj_byte(o, ',')) != BJ_OK) return r;
      if ((r = bj_value(o, keys, v, depth)) != BJ_OK) return r;
    }
    return bj_byte(o, ']');
  }
  if ((r = bj_byte(o, '{')) != BJ_OK) return r;
  for (i = 0; i < asize; i++) {  /* slot 0 is key 0 */
    if (bj_step(o)) return BJ_STOPPED;
    if (tvisnil(&array[i])) continue;
    if ((!first && (r = bj_byte(o, ',')) != BJ_OK)
        || (r = bj_int(o, (int64_t)i, 1)) != BJ_OK
        || (r = bj_value(o, keys, &array[i], depth)) != BJ_OK)
      return r;
    first = 0;
  }
  for (i = 0; i <= hmask; i++) {
    const Node *nd = &node[i];
    if (bj_step(o)) return BJ_STOPPED;
    if (tvisnil(&nd->val)) continue;
    if ((!first && (r = bj_byte(o, ',')) != BJ_OK)
        || (r = bj_nodekey(o, keys, &nd->key)) != BJ_OK
        || (r = bj_value(o, keys, &nd->val, depth)) != BJ_OK)
      return r;
    first = 0;
  }
  if (first) {  /* no entry: an empty array */
    o->buf[o->len - 1] = '[';
    return bj_byte(o, ']');
  }
  return bj_byte(o, '}');
}

/* Appends the table `t` (lua_topointer of a table) as JSON; returns BJ_OK or what failed. Its depth is 0. */
int brisk_json_table (brisk_json_out *o, const void *t) {
  bj_keys keys;
  memset(keys.key, 0, sizeof(keys.key));
  return bj_table(o, &keys, (GCtab *)t, 0);
}

/* -- A servlet request's own steps --------------------------------------
** Three steps every servlet request takes, on LuaJIT's objects rather
** than through the C API (whose calls each find their slot again through
** index2adr, check types and, for each object made, the collector):
** readying the coroutine (run.rs's `prepare`), making the request table
** (req.rs's `new_request`) and reading res:write's arguments (res.rs).
** Each does only the common case and returns 0 for anything else, which
** the Rust caller then does through the C API as before. Nothing here
** runs Lua code; only brisk_new_request allocates (and may raise a
** memory error, as lua_createtable would, inside the servlet's run).
*/
#include "lj_gc.h"
#include "lj_str.h"

/* Empties the stack of `co` (a coroutine that is not running) and pushes
** t[k[0]] .. t[k[n-1]] of the table `t` (lua_topointer of a table the
** registry holds): what lua_settop(co, 0) and n lua_rawgeti do. 0, and
** nothing done, if `co` is not free (a yielded or dead one) or its stack
** has no room for them. */
int brisk_prepare (lua_State *co, const void *t, const int32_t *k, int n) {
  GCtab *tab = (GCtab *)t;
  TValue *top;
  int i;
  if (co->status != LUA_OK || n < 0 || tvref(co->maxstack) - co->base <= n)
    return 0;
  top = co->base;
  for (i = 0; i < n; i++) {
    cTValue *v = lj_tab_getint(tab, k[i]);
    if (v) copyTV(co, top, v); else setnilV(top);
    top++;
  }
  co->top = top;
  return 1;
}

/* new_request(mt): pushes the request table {raw, body} (body left out
** when empty) with the metatable at index 1 of this C function's frame,
** as lua_createtable, two lua_pushlstring and lua_setmetatable would;
** 0, and nothing pushed, if the argument is no table. Called from a C
** function (LUA_MINSTACK free slots: one is used). */
int brisk_new_request (lua_State *L, const char *raw, size_t raw_len,
                       const char *body, size_t body_len) {
  GCtab *mt, *t;
  if (L->top <= L->base || !tvistab(L->base)) return 0;
  mt = tabV(L->base);
  lj_gc_check(L);
  t = lj_tab_new(L, body_len ? 3 : 2, 0);  /* (slot 0 counts) */
  settabV(L, L->top, t);
  L->top++;
  /* A new table is white: storing white strings in it needs no barrier,
  ** and lj_str_new runs no collector step. */
  setstrV(L, arrayslot(t, 1), lj_str_new(L, raw, raw_len));
  if (body_len) setstrV(L, arrayslot(t, 2), lj_str_new(L, body, body_len));
  setgcref(t->metatable, obj2gco(mt));
  lj_gc_objbarriert(L, t, mt);
  return 1;
}

/* A header field of res:write's table: a name and value (strings). */
typedef struct brisk_pair {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} brisk_pair;

/* res:write(status, headers, body)'s arguments, read in place. */
typedef struct brisk_write {
  const void *self;   /* argument 1's block if a full userdata, else NULL */
  const void *known;  /* the block of the C closure's second upvalue (or NULL) */
  double status;      /* argument 2, a number */
  const char *body;   /* argument 4's bytes; NULL: nil or none */
  size_t body_len;
  brisk_pair *pairs;  /* the header table's fields, lua_next's order */
  size_t npairs, maxpairs;
} brisk_write;

/* Reads the arguments of the res:write C closure running on L into w: 1
** when they have the common form (argument 2 a number; 3 nil, none or a
** table whose fields are at most w->maxpairs strings keyed by strings;
** 4 nil, none or a string), else 0. The strings stay put while the
** arguments do (the call). The fields come in lua_next's (lj_tab_next's)
** order: the array part (whose keys are no strings: 0), then the hash
** nodes 0..hmask. */
int brisk_write_args (lua_State *L, brisk_write *w) {
  cTValue *a = L->base;
  ptrdiff_t n = L->top - L->base;
  GCfuncC *fn = &curr_func(L)->c;
  w->self = n >= 1 && tvisudata(&a[0]) ? uddata(udataV(&a[0])) : NULL;
  w->known = fn->nupvalues >= 2 && tvisudata(&fn->upvalue[1]) ?
             uddata(udataV(&fn->upvalue[1])) : NULL;
  w->npairs = 0;
  if (n < 2 || !tvisnumber(&a[1])) return 0;
  w->status = numberVnum(&a[1]);
  if (n >= 3 && tvistab(&a[2])) {
    GCtab *t = tabV(&a[2]);
    TValue *array = tvref(t->array);
    Node *node = noderef(t->node);
    uint32_t i;
    for (i = 0; i < t->asize; i++)
      if (!tvisnil(&array[i])) return 0;
    for (i = 0; i <= t->hmask; i++) {
      const Node *nd = &node[i];
      brisk_pair *p;
      if (tvisnil(&nd->val)) continue;
      if (!tvisstr(&nd->key) || !tvisstr(&nd->val) || w->npairs == w->maxpairs)
        return 0;
      p = &w->pairs[w->npairs++];
      p->name = strdata(strV(&nd->key));
      p->name_len = strV(&nd->key)->len;
      p->value = strdata(strV(&nd->val));
      p->value_len = strV(&nd->val)->len;
    }
  } else if (n >= 3 && !tvisnil(&a[2])) {
    return 0;
  }
  w->body = NULL;
  w->body_len = 0;
  if (n >= 4 && tvisstr(&a[3])) {
    w->body = strdata(strV(&a[3]));
    w->body_len = strV(&a[3])->len;
  } else if (n >= 4 && !tvisnil(&a[3])) {
    return 0;
  }
  return 1;
}

/* With the FFI compiled out (LUAJIT_DISABLE_FFI, for size) libluajit.a
** has no luaopen_ffi, but mlua refers to it (StdLib::FFI, which brisk
** never asks for): release builds drop the reference, debug builds (the
** test suite) fail to link without this. */
#if !LJ_HASFFI
#include "lauxlib.h"
LUALIB_API int luaopen_ffi (lua_State *L) {
  return luaL_error(L, "the FFI is compiled out");
}
#endif
