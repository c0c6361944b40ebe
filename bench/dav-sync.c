/* bench/dav-sync: the disk's own rate of durable file replacements, no server
   (issue #31; bench/RESULTS.md, "WebDAV"). T threads each, in a loop:
   make a 1 MiB file (16 writes of 64 KiB) in DIR, make it durable, put it in
   place of one of 20 names (in turn, shared by the threads) with the old file
   held open across the rename (as brisk does), close the old file. Ways are
   run in turn, SECS seconds each, ROUNDS rounds; files/s and the mean time of
   each step are printed per run.

   Ways (the file: O_TMPFILE linked through AT_EMPTY_PATH to a temporary name
   then renamed, as brisk; or "named": created under the temporary name):
     tmp-fsync-dir     O_TMPFILE, fsync, linkat, rename, fsync(dir)     (brisk)
     tmp-fdsync-dir    O_TMPFILE, fdatasync, linkat, rename, fsync(dir)
     named-fsync-dir   named temp, fsync, rename, fsync(dir)
     tmp-dir-early     O_TMPFILE, fsync, linkat, fsync(dir), rename, fsync(dir)
     tmp-fsync         O_TMPFILE, fsync, linkat, rename                 (name not durable)
     tmp-sfr-dir       O_TMPFILE, sync_file_range(wait), linkat, rename, fsync(dir)
                       (one journal commit; durable on ext4 only)
     tmp-none          O_TMPFILE, linkat, rename                        (lighttpd)
     tmp-early-dir     as tmp-fsync-dir, with sync_file_range(WRITE) (writeback started,
                       not waited for) after each 256 KiB written
   SPREAD_MS=N in the environment spreads each file's 16 writes over N ms (a body
   arriving over the network, as in a PUT), so that early writeback has time to work.

   cc -O2 -pthread -o dav-sync dav-sync.c
   dav-sync DIR [SECS=3] [ROUNDS=3] [THREADS=4,8,16] [WAYS=all, comma-separated] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { W_TMP = 1, W_FDATA = 2, W_NAMED = 4, W_EARLY = 8, W_NODIR = 16, W_SFR = 32, W_NONE = 64,
       W_WB = 128 };
static const struct { const char *name; int flags; } WAYS[] = {
  {"tmp-fsync-dir", W_TMP},
  {"tmp-fdsync-dir", W_TMP | W_FDATA},
  {"named-fsync-dir", W_NAMED},
  {"tmp-dir-early", W_TMP | W_EARLY},
  {"tmp-fsync", W_TMP | W_NODIR},
  {"tmp-sfr-dir", W_TMP | W_SFR},
  {"tmp-none", W_TMP | W_NONE},
  {"tmp-early-dir", W_TMP | W_WB},
};
#define NWAYS (sizeof WAYS / sizeof WAYS[0])
enum { S_WRITE, S_SYNC, S_LINK, S_RENAME, S_DIRSYNC, S_CLOSE, NSTEPS };
static const char *STEPS[] = {"write", "sync", "link", "rename", "dirsync", "close"};

static int dirfd_, flags_, spread_us_;
static atomic_int stop_;
static atomic_ulong next_, done_;
static atomic_ulong ns_[NSTEPS];
static char buf[65536];

static unsigned long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000UL + t.tv_nsec;
}
#define STEP(s, call) do { unsigned long t0 = now(); if ((call) < 0) { perror(#call); exit(1); } \
  atomic_fetch_add(&ns_[s], now() - t0); } while (0)

static void *worker(void *arg) {
  long id = (long)arg;
  unsigned long n = 0;
  while (!atomic_load(&stop_)) {
    char name[32], tmp[64];
    snprintf(name, sizeof name, "f-%02lu", atomic_fetch_add(&next_, 1) % 20);
    snprintf(tmp, sizeof tmp, ".put.%ld.%lu", id, n++);
    int fd;
    if (flags_ & W_NAMED)
      fd = openat(dirfd_, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    else
      fd = openat(dirfd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) { perror("open"); exit(1); }
    unsigned long t0 = now();
    for (int i = 0; i < 16; i++) {
      unsigned long w0 = now();
      if (write(fd, buf, sizeof buf) != sizeof buf) { perror("write"); exit(1); }
      if ((flags_ & W_WB) && i % 4 == 3)
        sync_file_range(fd, (off_t)(i - 3) * sizeof buf, 4 * sizeof buf, SYNC_FILE_RANGE_WRITE);
      atomic_fetch_add(&ns_[S_WRITE], now() - w0);
      if (spread_us_) usleep(spread_us_ / 16);
    }
    (void)t0;
    int old = openat(dirfd_, name, O_RDONLY | O_CLOEXEC);
    if (flags_ & W_SFR)
      STEP(S_SYNC, sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                               SYNC_FILE_RANGE_WAIT_AFTER));
    else if (flags_ & W_FDATA)
      STEP(S_SYNC, fdatasync(fd));
    else if (!(flags_ & W_NONE))
      STEP(S_SYNC, fsync(fd));
    if (!(flags_ & W_NAMED))
      STEP(S_LINK, linkat(fd, "", dirfd_, tmp, AT_EMPTY_PATH));
    if (flags_ & W_EARLY)
      STEP(S_DIRSYNC, fsync(dirfd_));
    STEP(S_RENAME, renameat(dirfd_, tmp, dirfd_, name));
    if (!(flags_ & (W_NODIR | W_NONE)))
      STEP(S_DIRSYNC, fsync(dirfd_));
    t0 = now();
    close(fd);
    if (old >= 0) close(old);
    atomic_fetch_add(&ns_[S_CLOSE], now() - t0);
    atomic_fetch_add(&done_, 1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: dav-sync DIR [SECS] [ROUNDS] [THREADS] [WAYS]\n"); return 2; }
  int secs = argc > 2 ? atoi(argv[2]) : 3, rounds = argc > 3 ? atoi(argv[3]) : 3;
  const char *threads = argc > 4 ? argv[4] : "4,8,16";
  const char *ways = argc > 5 ? argv[5] : NULL;
  dirfd_ = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd_ < 0) { perror(argv[1]); return 1; }
  memset(buf, 'x', sizeof buf);
  if (getenv("SPREAD_MS")) spread_us_ = atoi(getenv("SPREAD_MS")) * 1000;
  /* The 20 names exist (each PUT replaces a file, as in bench/dav). */
  for (int i = 0; i < 20; i++) {
    char name[32];
    snprintf(name, sizeof name, "f-%02d", i);
    int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int k = 0; k < 16; k++) write(fd, buf, sizeof buf);
    close(fd);
  }
  sync();
  printf("%-16s %3s %5s %8s", "way", "thr", "round", "files/s");
  for (int s = 0; s < NSTEPS; s++) printf(" %7s", STEPS[s]);
  printf("  (ms a file)\n");
  for (int r = 1; r <= rounds; r++) {
    char tl[64];
    snprintf(tl, sizeof tl, "%s", threads);
    for (char *tp, *t = strtok_r(tl, ",", &tp); t; t = strtok_r(NULL, ",", &tp)) {
      int nt = atoi(t);
      for (size_t w = 0; w < NWAYS; w++) {
        if (ways) {
          char wl[256];
          int want = 0;
          snprintf(wl, sizeof wl, "%s", ways);
          for (char *wp, *x = strtok_r(wl, ",", &wp); x; x = strtok_r(NULL, ",", &wp))
            want |= !strcmp(x, WAYS[w].name);
          if (!want) continue;
        }
        flags_ = WAYS[w].flags;
        atomic_store(&stop_, 0);
        atomic_store(&done_, 0);
        for (int s = 0; s < NSTEPS; s++) atomic_store(&ns_[s], 0);
        pthread_t th[64];
        unsigned long t0 = now();
        for (long i = 0; i < nt && i < 64; i++) pthread_create(&th[i], NULL, worker, (void *)i);
        sleep(secs);
        atomic_store(&stop_, 1);
        for (int i = 0; i < nt && i < 64; i++) pthread_join(th[i], NULL);
        double el = (now() - t0) / 1e9, n = atomic_load(&done_);
        printf("%-16s %3d %5d %8.1f", WAYS[w].name, nt, r, n / el);
        for (int s = 0; s < NSTEPS; s++) printf(" %7.2f", n ? atomic_load(&ns_[s]) / n / 1e6 : 0);
        printf("\n");
        fflush(stdout);
      }
    }
  }
  return 0;
}
