/*
** brisk's additions to the vendored Lua 5.4 (servlets): lua.h includes
** this file last when LUA_USER_H names it, which .cargo/config.toml's
** [env] does (CFLAGS, and CPATH for the directory). Other C libraries
** built with those flags never include lua.h, so only Lua sees it.
** Cargo does not know that mlua-sys's build reads this file: after
** changing it, `cargo clean -p mlua-sys` (else the old build stays).
** Without the [env] (brisk built as another project's dependency) Lua
** is stock, and only slower.
*/
#ifndef brisk_lua_user_h
#define brisk_lua_user_h

#include <string.h>

/*
** Lua writes an integer as a string ("item " .. i, tostring(i)) with
** snprintf("%lld"): about 840 instructions each through glibc's
** vfprintf, against about 60 here (bench scenario 10 makes 100 a
** request). Same output as "%lld": an optional '-', then the decimal
** digits, and a terminating NUL; returns the length.
*/
static inline int brisk_integer2str (char *s, size_t sz, long long n) {
  char digits[24];
  char *p = digits + sizeof(digits);
  unsigned long long u = n < 0 ? 0ull - (unsigned long long)n
                               : (unsigned long long)n;
  int len;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (n < 0)
    *--p = '-';
  len = (int)(digits + sizeof(digits) - p);
  (void)sz;  /* MAXNUMBER2STR (44) bytes, more than the 21 written */
  memcpy(s, p, (size_t)len);
  s[len] = '\0';
  return len;
}

#undef lua_integer2str
#define lua_integer2str(s,sz,n) brisk_integer2str((s), (sz), (long long)(n))

/*
** The interpreter is built for size (-Os: Cargo.toml's profile for
** mlua-sys), but the files a request runs through are optimised for
** speed: the VM loop, tables, strings, the collector, calls and the C
** API. Each of those files defines its name as a macro before it
** includes lua.h. Release builds only (debug builds stay at -O0).
*/
#if defined(__OPTIMIZE_SIZE__) && defined(__GNUC__) && !defined(__clang__) \
    && (defined(lvm_c) || defined(ltable_c) || defined(lgc_c) \
        || defined(lstring_c) || defined(ldo_c) || defined(lapi_c) \
        || defined(lobject_c) || defined(ltm_c) || defined(lfunc_c) \
        || defined(lmem_c) || defined(linit_c))
#pragma GCC optimize ("O2")
#endif

/*
** brisk.json.encode's walk over tables, on Lua's own structures:
** compiled into linit.c (the smallest of Lua's files, which includes
** nothing internal itself), where it needs the internal headers that
** describe this build's tables and strings. See brisk_json.c.
*/
#if defined(linit_c)
#include "lstate.h"
#include "brisk_json.c"
#endif

#endif
